"""A node's ephemeral storage as an EC2NodeClass decides it (pure: shared by the solver and the launch).

As Karpenter: each AMI family has default block device mappings (a 20Gi encrypted gp3 root; Bottlerocket
a 4Gi OS volume and a 20Gi data volume, which is where its kubelet keeps its data; Windows a 50Gi root on
`/dev/sda1`). The kubelet's volume is the mapping marked `rootVolume`, else the one on the family's kubelet
device (`/dev/xvdb` for Bottlerocket, `/dev/sda1` for Windows, `/dev/xvda` otherwise), else, for Custom
AMIs, the last mapping; without a size it is the family default.
With `instanceStorePolicy: RAID0` the AMI builds a RAID0 array from the instance's local NVMe disks and
puts the kubelet's data there, so the node's ephemeral storage is their total size (decimal GB, as EC2
reports it) on types that have them.

The kubelet keeps back, as Karpenter counts it: kube-reserved (1Gi unless `spec.kubelet.kubeReserved`
says), system-reserved, and the larger of the hard and soft `nodefs.available` eviction thresholds (hard
10% unless set).
"""

from __future__ import annotations

from apis.ec2nodeclass import EBS, BlockDeviceMapping, EC2NodeClass, KubeletConfiguration
from apis.values.quantity import threshold_units, to_units

GIB = 2**30
GB = 10**9
RESOURCE = "ephemeral-storage"
DEFAULT_VOLUME_SIZE = "20Gi"
DEFAULT_KUBE_RESERVED = "1Gi"
DEFAULT_NODEFS_AVAILABLE = "10%"
BOTTLEROCKET = "Bottlerocket"
CUSTOM = "Custom"
WINDOWS = ("Windows2019", "Windows2022", "Windows2025")
WINDOWS_ROOT_DEVICE = "/dev/sda1"
WINDOWS_VOLUME_SIZE = "50Gi"


def default_block_devices(family: str) -> list[BlockDeviceMapping]:
    """The family's default mappings, the kubelet's volume marked `rootVolume`."""
    if family == BOTTLEROCKET:
        return [
            BlockDeviceMapping(device_name="/dev/xvda", ebs=EBS(volume_size="4Gi", volume_type="gp3", encrypted=True)),
            BlockDeviceMapping(
                device_name="/dev/xvdb",
                root_volume=True,
                ebs=EBS(volume_size=DEFAULT_VOLUME_SIZE, volume_type="gp3", encrypted=True),
            ),
        ]
    if family in WINDOWS:
        return [
            BlockDeviceMapping(
                device_name=WINDOWS_ROOT_DEVICE,
                root_volume=True,
                ebs=EBS(volume_size=WINDOWS_VOLUME_SIZE, volume_type="gp3", encrypted=True),
            )
        ]
    return [
        BlockDeviceMapping(
            device_name="/dev/xvda",
            root_volume=True,
            ebs=EBS(volume_size=DEFAULT_VOLUME_SIZE, volume_type="gp3", encrypted=True),
        )
    ]


def block_devices(node_class: EC2NodeClass, family: str) -> list[BlockDeviceMapping]:
    """The node class's mappings, else the family's defaults; never empty."""
    return list(node_class.spec.block_device_mappings or default_block_devices(family))


def launch_block_devices(node_class: EC2NodeClass, family: str) -> list[BlockDeviceMapping]:
    """The mappings a launch sets: the node class's, else the family's defaults; none for a Custom AMI
    whose node class sets none, as Karpenter leaves it to the AMI's own mappings (its root may well be on
    `/dev/sda1`, and a default `/dev/xvda` volume would be an extra, unused disk). Its ephemeral storage
    is still counted as a default root (`volume_bytes`), as Karpenter counts it."""
    if not node_class.spec.block_device_mappings and family == CUSTOM:
        return []
    return block_devices(node_class, family)


def kubelet_device_name(family: str) -> str:
    """The device the family's AMI gives the kubelet when no mapping is marked `rootVolume`."""
    if family in WINDOWS:
        return WINDOWS_ROOT_DEVICE
    return "/dev/xvdb" if family == BOTTLEROCKET else "/dev/xvda"


def kubelet_volume(node_class: EC2NodeClass, family: str) -> BlockDeviceMapping | None:
    """The mapping holding the kubelet's data (see the module docstring), or None when none is known."""
    devices = block_devices(node_class, family)
    marked = next((d for d in devices if d.root_volume), None)
    if marked is not None:
        return marked
    on_device = next((d for d in devices if d.device_name == kubelet_device_name(family)), None)
    if on_device is not None:
        return on_device
    return devices[-1] if family == CUSTOM else None


def volume_bytes(node_class: EC2NodeClass, family: str) -> int:
    """The size in bytes of the kubelet's volume; the family default when it has no size."""
    volume = kubelet_volume(node_class, family)
    if volume is None or volume.ebs is None or volume.ebs.volume_size is None:
        return to_units(RESOURCE, DEFAULT_VOLUME_SIZE)
    return to_units(RESOURCE, volume.ebs.volume_size)


def ephemeral_storage_bytes(node_class: EC2NodeClass, family: str, local_nvme_gb: int | None = None) -> int:
    """The node's ephemeral-storage capacity: the local NVMe total (`local_nvme_gb`, decimal GB) under
    `instanceStorePolicy: RAID0` when the type has some, else the kubelet volume's size."""
    if node_class.spec.instance_store_policy == "RAID0" and local_nvme_gb:
        return local_nvme_gb * GB
    return volume_bytes(node_class, family)


def node_class_family(node_class: EC2NodeClass) -> str:
    """The AMI family whose storage layout the nodes get: an alias term's family, else `spec.amiFamily`,
    else Custom. Never raises (the launch reports a family nodeflow cannot run)."""
    return node_class.spec.alias_family() or node_class.spec.ami_family or CUSTOM


def ephemeral_storage_overhead(capacity: int, kubelet: KubeletConfiguration | None) -> int:
    """Bytes of `capacity` pods cannot use: kube-reserved + system-reserved + the nodefs eviction threshold."""
    kube_reserved = dict((kubelet.kube_reserved or {}) if kubelet else {})
    system_reserved = dict((kubelet.system_reserved or {}) if kubelet else {})
    hard = {"nodefs.available": DEFAULT_NODEFS_AVAILABLE, **((kubelet.eviction_hard or {}) if kubelet else {})}
    soft = (kubelet.eviction_soft or {}) if kubelet else {}
    thresholds = [
        threshold_units(RESOURCE, v, capacity)
        for v in (hard.get("nodefs.available"), soft.get("nodefs.available"))
        if v
    ]
    return (
        to_units(RESOURCE, kube_reserved.get(RESOURCE, DEFAULT_KUBE_RESERVED))
        + to_units(RESOURCE, system_reserved.get(RESOURCE, "0"))
        + max(thresholds, default=0)
    )
