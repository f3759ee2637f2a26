"""EC2NodeClass fields that reach the launch template and CreateFleet, checked against EC2's own request
model (botocore's parameter validation), as Karpenter writes them."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from cloudprovider.aws.launch.launchtemplate import LaunchTemplateSpec
from tests.unit.cloudprovider.builders import node_class

EC2 = botocore.session.get_session().get_service_model("ec2")


def template_data(**spec: Any) -> dict[str, Any]:
    template = LaunchTemplateSpec("ami-1", "ud", ("sg-1", "sg-2"), "profile", node_class(**spec), "AL2023", ())
    data = template.data()
    request = {"LaunchTemplateName": "t", "LaunchTemplateData": data}
    report = ParamValidator().validate(request, EC2.operation_model("CreateLaunchTemplate").input_shape)
    assert not report.has_errors(), report.generate_report()
    return data


def test_without_associate_public_ip_address_the_groups_go_on_the_template() -> None:
    data = template_data()
    assert data["SecurityGroupIds"] == ["sg-1", "sg-2"]
    assert "NetworkInterfaces" not in data


@pytest.mark.parametrize("public", [True, False])
def test_associate_public_ip_address_sets_the_primary_interface_which_carries_the_groups(public: bool) -> None:
    data = template_data(associatePublicIPAddress=public)
    primary = {"DeviceIndex": 0, "AssociatePublicIpAddress": public, "Groups": ["sg-1", "sg-2"]}
    assert data["NetworkInterfaces"] == [primary]
    assert "SecurityGroupIds" not in data  # EC2 refuses groups both on the template and on an interface


def test_ip_prefix_count_and_connection_tracking_set_the_primary_interface() -> None:
    data = template_data(ipPrefixCount=2, connectionTracking={"tcpEstablishedTimeout": 600, "udpTimeout": 45})
    assert data["NetworkInterfaces"] == [
        {
            "DeviceIndex": 0,
            "Ipv4PrefixCount": 2,
            "ConnectionTrackingSpecification": {"TcpEstablishedTimeout": 600, "UdpTimeout": 45},
            "Groups": ["sg-1", "sg-2"],
        }
    ]
    assert "SecurityGroupIds" not in data


def test_declared_network_interfaces_each_carry_the_groups_and_efa_only_skips_connection_tracking() -> None:
    interfaces = [
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
    ]
    data = template_data(
        networkInterfaces=interfaces,
        associatePublicIPAddress=False,
        ipPrefixCount=1,
        connectionTracking={"udpStreamTimeout": 120},
    )
    primary, efa = data["NetworkInterfaces"]
    assert primary == {
        "NetworkCardIndex": 0,
        "DeviceIndex": 0,
        "AssociatePublicIpAddress": False,
        "Ipv4PrefixCount": 1,
        "ConnectionTrackingSpecification": {"UdpStreamTimeout": 120},
        "Groups": ["sg-1", "sg-2"],
    }
    assert efa == {"NetworkCardIndex": 1, "DeviceIndex": 0, "InterfaceType": "efa-only", "Groups": ["sg-1", "sg-2"]}


def test_cpu_options_nested_virtualization() -> None:
    assert template_data(cpuOptions={"nestedVirtualization": "enabled"})["CpuOptions"] == {
        "NestedVirtualization": "enabled"
    }
    assert "CpuOptions" not in template_data(cpuOptions={})


def test_volume_initialization_rate_reaches_the_ebs_mapping() -> None:
    mapping = {
        "deviceName": "/dev/xvda",
        "rootVolume": True,
        "ebs": {"volumeSize": "40Gi", "snapshotID": "snap-1", "volumeInitializationRate": 200},
    }
    (device,) = template_data(blockDeviceMappings=[mapping])["BlockDeviceMappings"]
    assert device["Ebs"]["VolumeInitializationRate"] == 200
    assert device["Ebs"]["SnapshotId"] == "snap-1"
    assert device["Ebs"]["VolumeSize"] == 40


def test_each_field_changes_the_templates_name() -> None:
    def name(**spec: Any) -> str:
        return LaunchTemplateSpec("ami-1", "ud", ("sg-1",), "p", node_class(**spec), "AL2023", ()).name()

    names = {name(), name(associatePublicIPAddress=False), name(cpuOptions={"nestedVirtualization": "enabled"})}
    assert len(names) == 3
