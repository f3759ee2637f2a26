"""Pure parts of the launch: capacity-type choice, AMI choice, block devices."""

from __future__ import annotations

from typing import Any

from apis.instancetype import InstanceType
from apis.storage import ephemeral_storage_bytes
from cloudprovider.aws.launch.create import (
    Override,
    choose_capacity_type,
    pick_ami,
    prefer_generic,
    spot_cheaper_than_on_demand,
)
from cloudprovider.aws.launch.launchtemplate import LaunchTemplateSpec
from cloudprovider.aws.nodeclass.resolve import ResolvedAMI, instance_profile_name, tag_filters
from tests.unit.cloudprovider.builders import node_class

AMIS = [
    ResolvedAMI("ami-arm", "al2023-arm64-standard", "arm64", "standard"),
    ResolvedAMI("ami-x86", "al2023-x86_64-standard", "x86_64", "standard"),
    ResolvedAMI("ami-gpu", "al2023-x86_64-nvidia", "x86_64", "nvidia"),
]


def itype(arch: str, gpus: int = 0) -> InstanceType:
    capacity = {"cpu": "2", "memory": "8Gi"} | ({"nvidia.com/gpu": str(gpus)} if gpus else {})
    return InstanceType(name="x", capacity=capacity, labels={"kubernetes.io/arch": arch})


def test_spot_only_when_allowed_and_offered() -> None:
    spot = [Override("m5.large", "subnet-1", "us-west-2a", 0.03, AMIS[1])]
    assert choose_capacity_type(["spot", "on-demand"], {"spot": spot}) == "spot"
    assert choose_capacity_type(["spot", "on-demand"], {"on-demand": spot}) == "on-demand"
    assert choose_capacity_type(["on-demand"], {"spot": spot}) == "on-demand"


def test_ami_by_architecture_and_accelerator() -> None:
    assert pick_ami(itype("arm64"), AMIS) == AMIS[0]
    assert pick_ami(itype("amd64"), AMIS) == AMIS[1]
    assert pick_ami(itype("amd64", gpus=1), AMIS) == AMIS[2]
    assert pick_ami(itype("arm64", gpus=1), AMIS) == AMIS[0]  # no arm64 nvidia variant: fall back


def test_neuron_types_get_the_neuron_variant() -> None:
    neuron_ami = ResolvedAMI("ami-neuron", "al2023-x86_64-neuron", "x86_64", "neuron")
    inf2 = InstanceType(
        name="inf2.xlarge",
        capacity={"cpu": "4", "memory": "16Gi", "aws.amazon.com/neuron": "1"},
        labels={"kubernetes.io/arch": "amd64"},
    )
    assert pick_ami(inf2, [*AMIS, neuron_ami]) == neuron_ami
    assert pick_ami(itype("amd64", gpus=1), [*AMIS, neuron_ami]) == AMIS[2]


def test_root_volume_sets_ephemeral_storage() -> None:
    assert ephemeral_storage_bytes(node_class(), "AL2023") == 20 * 2**30
    custom = node_class(
        blockDeviceMappings=[{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}]
    )
    assert ephemeral_storage_bytes(custom, "AL2023") == 100 * 2**30


def test_launch_template_name_is_a_content_hash() -> None:
    def spec(image: str) -> LaunchTemplateSpec:
        return LaunchTemplateSpec(image, "ud", ("sg-1",), "profile", node_class(), "AL2023", (("k", "v"),))

    assert spec("ami-1").name() == spec("ami-1").name()
    assert spec("ami-1").name() != spec("ami-2").name()
    assert spec("ami-1").name().startswith("karpenter.k8s.aws/")
    data = spec("ami-1").data()
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["BlockDeviceMappings"][0]["Ebs"] == {
        "DeleteOnTermination": True,
        "VolumeSize": 20,
        "VolumeType": "gp3",
        "Encrypted": True,
    }


def test_a_custom_ami_without_mappings_keeps_its_own_and_still_counts_a_default_root() -> None:
    def template(family: str, **spec: Any) -> dict[str, Any]:
        return LaunchTemplateSpec("ami-1", "ud", ("sg-1",), "profile", node_class(**spec), family, ()).data()

    assert "BlockDeviceMappings" not in template("Custom")
    assert ephemeral_storage_bytes(node_class(), "Custom") == 20 * 2**30
    mapped = template("Custom", blockDeviceMappings=[{"deviceName": "/dev/sda1", "ebs": {"volumeSize": "50Gi"}}])
    assert [d["DeviceName"] for d in mapped["BlockDeviceMappings"]] == ["/dev/sda1"]
    assert [d["DeviceName"] for d in template("AL2023")["BlockDeviceMappings"]] == ["/dev/xvda"]


def test_selectors_and_profile_names() -> None:
    assert tag_filters({"b": "*", "a": "x"}) == [
        {"Name": "tag:a", "Values": ["x"]},
        {"Name": "tag-key", "Values": ["b"]},
    ]
    name = instance_profile_name("prod", "us-west-2", node_class())
    assert name == instance_profile_name("prod", "us-west-2", node_class()) and name.startswith("prod_")


def test_spot_pricier_than_the_cheapest_on_demand_is_dropped() -> None:
    cheap_spot = Override("m5.large", "subnet-1", "us-west-2a", 0.03, AMIS[1])
    dear_spot = Override("p3.2xlarge", "subnet-1", "us-west-2a", 0.9, AMIS[1])
    on_demand = Override("c5.large", "subnet-1", "us-west-2a", 0.085, AMIS[1])
    candidates = {"spot": [cheap_spot, dear_spot], "on-demand": [on_demand]}
    assert spot_cheaper_than_on_demand(candidates) == [cheap_spot]
    assert spot_cheaper_than_on_demand({"spot": [dear_spot]}) == [dear_spot]


def test_a_launch_prefers_types_without_accelerators_or_bare_metal_when_there_are_any() -> None:
    def typed(name: str, size: str, **extra: str) -> InstanceType:
        labels = {"kubernetes.io/arch": "amd64", "karpenter.k8s.aws/instance-size": size}
        return InstanceType(name=name, capacity={"cpu": "4", "memory": "16Gi", **extra}, labels=labels)

    general = typed("m5.xlarge", "xlarge")
    metal = typed("m5.metal", "metal")
    metal_24 = typed("c7i.metal-24xl", "metal-24xl")
    nvidia = typed("g4dn.xlarge", "xlarge", **{"nvidia.com/gpu": "1"})
    amd = typed("g4ad.xlarge", "xlarge", **{"amd.com/gpu": "1"})
    neuron = typed("inf1.xlarge", "xlarge", **{"aws.amazon.com/neuron": "1"})
    assert prefer_generic([nvidia, metal, general, amd, neuron, metal_24]) == [general]
    assert prefer_generic([nvidia, amd]) == [nvidia, amd]  # a claim for GPU pods keeps its GPUs
