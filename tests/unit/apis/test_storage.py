"""A node's ephemeral storage from its EC2NodeClass: family defaults, the kubelet's volume, RAID0."""

from __future__ import annotations

from typing import Any

from apis.ec2nodeclass import EC2NodeClass, KubeletConfiguration
from apis.storage import (
    block_devices,
    ephemeral_storage_bytes,
    ephemeral_storage_overhead,
    node_class_family,
    volume_bytes,
)

GIB = 2**30


def node_class(alias: str = "al2023@latest", **spec: Any) -> EC2NodeClass:
    body = {
        "role": "NodeRole",
        "subnetSelectorTerms": [{"tags": {"k": "v"}}],
        "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
        "amiSelectorTerms": [{"alias": alias}] if alias else [{"id": "ami-0123"}],
        **spec,
    }
    return EC2NodeClass.model_validate({"metadata": {"name": "nc"}, "spec": body})


def ebs(size: str, device: str, root: bool | None = None) -> dict[str, Any]:
    mapping: dict[str, Any] = {"deviceName": device, "ebs": {"volumeSize": size}}
    if root is not None:
        mapping["rootVolume"] = root
    return mapping


def test_defaults_are_a_20gi_root_and_bottlerocket_counts_its_data_volume_not_its_os_volume() -> None:
    assert volume_bytes(node_class(), "AL2023") == 20 * GIB
    bottlerocket = node_class("bottlerocket@latest")
    assert node_class_family(bottlerocket) == "Bottlerocket"
    assert [d.ebs.volume_size for d in block_devices(bottlerocket, "Bottlerocket") if d.ebs] == ["4Gi", "20Gi"]
    assert volume_bytes(bottlerocket, "Bottlerocket") == 20 * GIB


def test_the_volume_marked_root_wins_else_the_familys_kubelet_device() -> None:
    marked = node_class(blockDeviceMappings=[ebs("100Gi", "/dev/xvda", True), ebs("500Gi", "/dev/xvdf")])
    assert volume_bytes(marked, "AL2023") == 100 * GIB
    unmarked = node_class(blockDeviceMappings=[ebs("80Gi", "/dev/xvda"), ebs("500Gi", "/dev/xvdf")])
    assert volume_bytes(unmarked, "AL2023") == 80 * GIB
    bottlerocket = node_class(
        "bottlerocket@latest", blockDeviceMappings=[ebs("4Gi", "/dev/xvda"), ebs("60Gi", "/dev/xvdb")]
    )
    assert volume_bytes(bottlerocket, "Bottlerocket") == 60 * GIB


def test_custom_amis_take_the_last_mapping_and_other_families_fall_back_to_the_default() -> None:
    custom = node_class("", amiFamily="Custom", blockDeviceMappings=[ebs("8Gi", "/dev/sda1"), ebs("70Gi", "/dev/sdb")])
    assert node_class_family(custom) == "Custom"
    assert volume_bytes(custom, "Custom") == 70 * GIB
    elsewhere = node_class(blockDeviceMappings=[ebs("300Gi", "/dev/sdz")])
    assert volume_bytes(elsewhere, "AL2023") == 20 * GIB


def test_raid0_uses_the_instance_store_where_there_is_one() -> None:
    raid0 = node_class(instanceStorePolicy="RAID0")
    assert ephemeral_storage_bytes(raid0, "AL2023", 600) == 600 * 10**9
    assert ephemeral_storage_bytes(raid0, "AL2023", None) == 20 * GIB
    assert ephemeral_storage_bytes(node_class(), "AL2023", 600) == 20 * GIB


def test_overhead_is_kube_reserved_system_reserved_and_the_nodefs_threshold() -> None:
    assert ephemeral_storage_overhead(100 * GIB, None) == 1 * GIB + 10 * GIB
    kubelet = KubeletConfiguration.model_validate(
        {
            "kubeReserved": {"ephemeral-storage": "2Gi"},
            "systemReserved": {"ephemeral-storage": "1Gi"},
            "evictionHard": {"nodefs.available": "5%"},
            "evictionSoft": {"nodefs.available": "8Gi"},
            "evictionSoftGracePeriod": {"nodefs.available": "1m"},
        }
    )
    assert ephemeral_storage_overhead(100 * GIB, kubelet) == 2 * GIB + 1 * GIB + 8 * GIB


def test_windows_nodes_get_karpenters_50gi_root_on_sda1_and_count_it_as_ephemeral_storage() -> None:
    windows = node_class("windows2022@latest")
    family = node_class_family(windows)
    assert family == "Windows2022"
    [root] = block_devices(windows, family)
    assert (root.device_name, root.root_volume) == ("/dev/sda1", True)
    assert root.ebs is not None and (root.ebs.volume_type, root.ebs.encrypted) == ("gp3", True)
    assert ephemeral_storage_bytes(windows, family) == 50 * GIB
    sized = node_class("windows2019@latest", blockDeviceMappings=[ebs("80Gi", "/dev/sda1")])
    assert volume_bytes(sized, node_class_family(sized)) == 80 * GIB
