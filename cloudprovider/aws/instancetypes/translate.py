"""EC2 `InstanceTypeInfo` -> nodeflow `InstanceType`: capacity, overhead and labels (pure functions).

The arithmetic follows Karpenter's AWS provider:
- memory capacity = the instance's MiB minus the VM overhead (`vm_memory_overhead_percent`, default 7.5%,
  rounded up to whole MiB), since the hypervisor and kernel keep that much;
- pods = kubelet `maxPods` when set, else the ENI limit (ENIs x (IPv4 per ENI - 1) + 2), capped at
  `podsPerCore` x vCPUs when that is set;
- ephemeral-storage = the size of the node class's kubelet volume, or under `instanceStorePolicy: RAID0`
  the instance store's total (decimal GB) on types that have one;
- overhead = kube-reserved (EKS formulas unless the kubelet sets it) + system-reserved + the eviction
  threshold (hard or soft, whichever is larger; default memory.available 100Mi, nodefs.available 10%).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apis import labels as L
from apis.ec2nodeclass import KubeletConfiguration
from apis.instancetype import (
    InstanceType,
    Offering,
    eks_kube_reserved_cpu_millis,
    eks_kube_reserved_memory_mib,
    eni_limited_max_pods,
)
from apis.values.quantity import format_units, threshold_units, to_units

MIB = 2**20
GIB = 2**30
GB = 10**9
DEFAULT_VM_MEMORY_OVERHEAD_PERCENT = 0.075
DEFAULT_ROOT_VOLUME_BYTES = 20 * GIB
DEFAULT_KUBE_RESERVED_EPHEMERAL_STORAGE = "1Gi"
DEFAULT_EVICTION_HARD = {"memory.available": "100Mi", "nodefs.available": "10%"}
TENANCY_DEFAULT = "default"  # EC2's shared-hardware tenancy, the only one nodeflow launches

RESOURCE_NVIDIA_GPU = "nvidia.com/gpu"
RESOURCE_AMD_GPU = "amd.com/gpu"
RESOURCE_NEURON = "aws.amazon.com/neuron"
RESOURCE_NEURON_CORE = "aws.amazon.com/neuroncore"
RESOURCE_GAUDI = "habana.ai/gaudi"
RESOURCE_EFA = "vpc.amazonaws.com/efa"

ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}

# family = category letters, an optional "-<n>tb" (u-6tb1), the generation digits, then attributes.
_FAMILY = re.compile(r"^(?P<category>[a-z]+)(?:-\d+tb)?(?P<generation>\d+)")


@dataclass(frozen=True)
class InstanceTypeSettings:
    """What besides the EC2 description shapes an instance type: the node class's kubelet settings and
    root volume (and whether the instance store replaces it, RAID0), and the provider's VM memory overhead."""

    kubelet: KubeletConfiguration | None = None
    root_volume_bytes: int = DEFAULT_ROOT_VOLUME_BYTES
    instance_store_raid0: bool = False
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
    reserved_enis: int = 0


def architecture(info: Mapping[str, Any]) -> str | None:
    """The Kubernetes arch (amd64/arm64) of the first supported EC2 architecture, or None if unsupported."""
    for arch in info.get("ProcessorInfo", {}).get("SupportedArchitectures", []):
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch]
    return None


def is_supported(info: Mapping[str, Any]) -> bool:
    """Whether nodeflow can launch this type: a Kubernetes architecture and not a dedicated-host-only Mac."""
    name = str(info.get("InstanceType", ""))
    return architecture(info) is not None and not name.startswith("mac")


def vcpus(info: Mapping[str, Any]) -> int:
    return int(info["VCpuInfo"]["DefaultVCpus"])


def memory_capacity_mib(info: Mapping[str, Any], overhead_percent: float) -> int:
    mib = int(info["MemoryInfo"]["SizeInMiB"])
    return mib - math.ceil(mib * overhead_percent)


def max_pods(info: Mapping[str, Any], kubelet: KubeletConfiguration | None, reserved_enis: int = 0) -> int:
    """The pod capacity: kubelet maxPods, else the ENI limit; then the podsPerCore cap."""
    if kubelet is not None and kubelet.max_pods is not None:
        count = kubelet.max_pods
    else:
        network = info.get("NetworkInfo", {})
        enis = max(int(network.get("MaximumNetworkInterfaces", 1)) - reserved_enis, 0)
        count = max(eni_limited_max_pods(enis, int(network.get("Ipv4AddressesPerInterface", 1))), 0)
    if kubelet is not None and kubelet.pods_per_core:
        count = min(count, kubelet.pods_per_core * vcpus(info))
    return count


def extended_resources(info: Mapping[str, Any]) -> dict[str, int]:
    """GPUs (NVIDIA/AMD), Neuron devices and EFA interfaces the device plugins would advertise."""
    out: dict[str, int] = {}
    for gpu in info.get("GpuInfo", {}).get("Gpus", []):
        manufacturer = str(gpu.get("Manufacturer", "")).lower()
        resource = {"nvidia": RESOURCE_NVIDIA_GPU, "amd": RESOURCE_AMD_GPU}.get(manufacturer)
        if resource:
            out[resource] = out.get(resource, 0) + int(gpu.get("Count", 0))
    neuron = sum(int(d.get("Count", 0)) for d in info.get("NeuronInfo", {}).get("NeuronDevices", []))
    if not neuron:
        accelerators = info.get("InferenceAcceleratorInfo", {}).get("Accelerators", [])
        neuron = sum(int(a.get("Count", 0)) for a in accelerators if a.get("Manufacturer") == "AWS")
    if neuron:
        out[RESOURCE_NEURON] = neuron
    network = info.get("NetworkInfo", {})
    if network.get("EfaSupported") and network.get("EfaInfo", {}).get("MaximumEfaInterfaces"):
        out[RESOURCE_EFA] = int(network["EfaInfo"]["MaximumEfaInterfaces"])
    return out


def ephemeral_storage(info: Mapping[str, Any], settings: InstanceTypeSettings) -> int:
    """Bytes of ephemeral storage: the instance store's total (EC2 reports decimal GB) when the node class
    asks for RAID0 and the type has one, else the kubelet volume's size."""
    total_gb = info.get("InstanceStorageInfo", {}).get("TotalSizeInGB")
    if settings.instance_store_raid0 and total_gb:
        return int(total_gb) * GB
    return settings.root_volume_bytes


def capacity(info: Mapping[str, Any], settings: InstanceTypeSettings) -> dict[str, int]:
    """Capacity in canonical units (cpu millicores, memory and storage bytes, counts)."""
    out = {
        "cpu": vcpus(info) * 1000,
        "memory": memory_capacity_mib(info, settings.vm_memory_overhead_percent) * MIB,
        "ephemeral-storage": ephemeral_storage(info, settings),
        "pods": max_pods(info, settings.kubelet, settings.reserved_enis),
    }
    out.update(extended_resources(info))
    return out


def _eviction(kubelet: KubeletConfiguration | None, cap: Mapping[str, int]) -> dict[str, int]:
    signals = {
        "memory.available": ("memory", cap["memory"]),
        "nodefs.available": ("ephemeral-storage", cap["ephemeral-storage"]),
    }
    hard = {**DEFAULT_EVICTION_HARD, **((kubelet.eviction_hard or {}) if kubelet else {})}
    soft = (kubelet.eviction_soft or {}) if kubelet else {}
    out: dict[str, int] = {}
    for signal, (resource, total) in signals.items():
        values = [threshold_units(resource, v, total) for v in (hard.get(signal), soft.get(signal)) if v]
        if values:
            out[resource] = max(values)
    return out


def overhead(cap: Mapping[str, int], kubelet: KubeletConfiguration | None) -> dict[str, int]:
    """kube-reserved + system-reserved + eviction threshold, in canonical units."""
    kube_reserved = {
        "cpu": eks_kube_reserved_cpu_millis(cap["cpu"]),
        "memory": eks_kube_reserved_memory_mib(cap["pods"]) * MIB,
        "ephemeral-storage": to_units("ephemeral-storage", DEFAULT_KUBE_RESERVED_EPHEMERAL_STORAGE),
    }
    if kubelet and kubelet.kube_reserved:
        kube_reserved.update({k: to_units(k, v) for k, v in kubelet.kube_reserved.items()})
    system_reserved = {k: to_units(k, v) for k, v in ((kubelet.system_reserved or {}) if kubelet else {}).items()}
    out: dict[str, int] = {}
    for part in (kube_reserved, system_reserved, _eviction(kubelet, cap)):
        for name, value in part.items():
            out[name] = out.get(name, 0) + value
    return out


def _family_labels(name: str) -> dict[str, str]:
    family, _, size = name.partition(".")
    out = {L.INSTANCE_FAMILY: family, L.INSTANCE_SIZE: size}
    match = _FAMILY.match(family)
    if match:
        out[L.INSTANCE_CATEGORY] = match["category"]
        out[L.INSTANCE_GENERATION] = match["generation"]
    return out


def _processor_labels(info: Mapping[str, Any]) -> dict[str, str]:
    processor = info.get("ProcessorInfo", {})
    out = {L.INSTANCE_CPU: str(vcpus(info))}
    if processor.get("Manufacturer"):
        out[L.INSTANCE_CPU_MANUFACTURER] = str(processor["Manufacturer"]).lower()
    if processor.get("SustainedClockSpeedInGhz"):
        out[L.INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ] = str(round(float(processor["SustainedClockSpeedInGhz"]) * 1000))
    return out


def _device_labels(info: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    if gpus:
        gpu = gpus[0]
        out[L.INSTANCE_GPU_NAME] = str(gpu.get("Name", "")).lower()
        out[L.INSTANCE_GPU_MANUFACTURER] = str(gpu.get("Manufacturer", "")).lower()
        out[L.INSTANCE_GPU_COUNT] = str(sum(int(g.get("Count", 0)) for g in gpus))
        out[L.INSTANCE_GPU_MEMORY] = str(int(gpu.get("MemoryInfo", {}).get("SizeInMiB", 0)))
    devices = info.get("NeuronInfo", {}).get("NeuronDevices") or info.get("InferenceAcceleratorInfo", {}).get(
        "Accelerators", []
    )
    if devices:
        out[L.INSTANCE_ACCELERATOR_NAME] = str(devices[0].get("Name", "")).lower()
        out[L.INSTANCE_ACCELERATOR_MANUFACTURER] = "aws"
        out[L.INSTANCE_ACCELERATOR_COUNT] = str(sum(int(d.get("Count", 0)) for d in devices))
    return out


def _platform_labels(info: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    if info.get("Hypervisor"):
        out[L.INSTANCE_HYPERVISOR] = str(info["Hypervisor"])
    network = info.get("NetworkInfo", {})
    bandwidth_gbps = sum(float(card.get("BaselineBandwidthInGbps", 0)) for card in network.get("NetworkCards", []))
    if bandwidth_gbps:
        out[L.INSTANCE_NETWORK_BANDWIDTH] = str(round(bandwidth_gbps * 1000))
    if "EncryptionInTransitSupported" in network:
        out[L.INSTANCE_ENCRYPTION_IN_TRANSIT] = str(bool(network["EncryptionInTransitSupported"])).lower()
    ebs_mbps = info.get("EbsInfo", {}).get("EbsOptimizedInfo", {}).get("MaximumBandwidthInMbps")
    if ebs_mbps:
        out[L.INSTANCE_EBS_BANDWIDTH] = str(int(ebs_mbps))
    storage = info.get("InstanceStorageInfo", {})
    if storage.get("NvmeSupport") in ("supported", "required") and storage.get("TotalSizeInGB"):
        out[L.INSTANCE_LOCAL_NVME] = str(int(storage["TotalSizeInGB"]))
    return out


def instance_labels(info: Mapping[str, Any]) -> dict[str, str]:
    """Karpenter's well-known labels derived from the instance type alone (no zone or capacity type).
    The tenancy is `default` (shared hardware): nodeflow launches no dedicated instances, so a NodePool
    asking for `dedicated` finds no type rather than a node on shared hardware."""
    name = str(info["InstanceType"])
    out = {
        L.INSTANCE_TYPE: name,
        L.ARCH: architecture(info) or "",
        L.OS: "linux",
        L.INSTANCE_MEMORY: str(int(info["MemoryInfo"]["SizeInMiB"])),
        L.INSTANCE_TENANCY: TENANCY_DEFAULT,
    }
    for part in (_family_labels(name), _processor_labels(info), _device_labels(info), _platform_labels(info)):
        out.update(part)
    return dict(sorted(out.items()))


def _quantities(resources: Mapping[str, int]) -> dict[str, str]:
    return {name: format_units(name, resources[name]) for name in sorted(resources)}


def to_instance_type(
    info: Mapping[str, Any], offerings: Sequence[Offering], settings: InstanceTypeSettings | None = None
) -> InstanceType:
    """Convert one DescribeInstanceTypes entry. `offerings` are passed through, sorted by (zone, capacity type)."""
    settings = settings or InstanceTypeSettings()
    cap = capacity(info, settings)
    return InstanceType(
        name=str(info["InstanceType"]),
        capacity=_quantities(cap),
        overhead=_quantities(overhead(cap, settings.kubelet)),
        labels=instance_labels(info),
        offerings=sorted(offerings, key=lambda o: (o.zone, o.capacity_type)),
    )
