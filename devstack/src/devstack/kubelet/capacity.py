"""A node's capacity and allocatable, from an EC2 DescribeInstanceTypes entry, as an EKS node reports them.

Pure functions over the boto3 `InstanceTypes[]` dict. The formulas are the EKS AMI's defaults, the same
ones Karpenter uses to predict allocatable: max pods from ENI limits, kube-reserved cpu and memory by
tiers, and the kubelet's hard eviction thresholds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.values.quantity import format_units

EPHEMERAL_STORAGE_BYTES = 20 * 2**30  # the root volume the simulated node boots with
KUBE_RESERVED_EPHEMERAL_BYTES = 2**30
EVICTION_MEMORY_BYTES = 100 * 2**20
EVICTION_NODEFS_FRACTION = 0.10

# (first millicore, last millicore, fraction reserved) per tier: 6% of the first core, 1% of the
# second, 0.5% of cores 3-4, 0.25% of the rest.
_CPU_RESERVE_TIERS: tuple[tuple[int, int | None, float], ...] = (
    (0, 1000, 0.06),
    (1000, 2000, 0.01),
    (2000, 4000, 0.005),
    (4000, None, 0.0025),
)

_GPU_RESOURCES: dict[str, str] = {"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu", "HABANA": "habana.ai/gaudi"}


def architecture(type_info: Mapping[str, Any]) -> str:
    """The kubernetes.io/arch value: "arm64" for Graviton types, "amd64" otherwise."""
    archs = (type_info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or []
    return "arm64" if "arm64" in archs and "x86_64" not in archs else "amd64"


def max_pods(type_info: Mapping[str, Any]) -> int:
    """ENI-limited pod count: ENIs x (IPv4 addresses per ENI - 1) + 2 (the VPC CNI's formula)."""
    network = type_info.get("NetworkInfo") or {}
    enis = int(network.get("MaximumNetworkInterfaces") or 1)
    ips = int(network.get("Ipv4AddressesPerInterface") or 2)
    return enis * (ips - 1) + 2


def kube_reserved_cpu_millis(cpu_millis: int) -> int:
    """EKS kube-reserved cpu for a node with `cpu_millis` of capacity, in millicores."""
    reserved = 0
    for start, end, fraction in _CPU_RESERVE_TIERS:
        if cpu_millis <= start:
            break
        top = cpu_millis if end is None else min(cpu_millis, end)
        reserved += int((top - start) * fraction)
    return reserved


def kube_reserved_memory_bytes(pods: int) -> int:
    """EKS kube-reserved memory: 11 MiB per pod plus 255 MiB."""
    return (11 * pods + 255) * 2**20


def extended_resources(type_info: Mapping[str, Any]) -> dict[str, int]:
    """Device-plugin resources the type's accelerators and EFA interfaces advertise, by resource name."""
    out: dict[str, int] = {}
    for gpu in (type_info.get("GpuInfo") or {}).get("Gpus") or []:
        name = _GPU_RESOURCES.get(str(gpu.get("Manufacturer", "")).upper())
        if name:
            out[name] = out.get(name, 0) + int(gpu.get("Count") or 0)
    neuron = sum(int(d.get("Count") or 0) for d in (type_info.get("NeuronInfo") or {}).get("NeuronDevices") or [])
    if neuron:
        out["aws.amazon.com/neuron"] = neuron
    efa = (type_info.get("NetworkInfo") or {}).get("EfaInfo") or {}
    if efa.get("MaximumEfaInterfaces"):
        out["vpc.amazonaws.com/efa"] = int(efa["MaximumEfaInterfaces"])
    return out


def capacity_units(type_info: Mapping[str, Any]) -> dict[str, int]:
    """Capacity in canonical units (cpu in millicores, memory and storage in bytes, counts)."""
    units = {
        "cpu": int(type_info["VCpuInfo"]["DefaultVCpus"]) * 1000,
        "memory": int(type_info["MemoryInfo"]["SizeInMiB"]) * 2**20,
        "ephemeral-storage": EPHEMERAL_STORAGE_BYTES,
        "pods": max_pods(type_info),
    }
    units.update(extended_resources(type_info))
    return units


def allocatable_units(capacity: Mapping[str, int]) -> dict[str, int]:
    """Capacity minus kube-reserved and the hard eviction thresholds; never negative."""
    out = dict(capacity)
    out["cpu"] = capacity["cpu"] - kube_reserved_cpu_millis(capacity["cpu"])
    out["memory"] = capacity["memory"] - kube_reserved_memory_bytes(capacity["pods"]) - EVICTION_MEMORY_BYTES
    storage = capacity["ephemeral-storage"]
    out["ephemeral-storage"] = storage - KUBE_RESERVED_EPHEMERAL_BYTES - int(storage * EVICTION_NODEFS_FRACTION)
    return {name: max(0, value) for name, value in out.items()}


def as_quantities(units: Mapping[str, int]) -> dict[str, str]:
    """Canonical units as the quantity strings a Node's status carries, sorted by resource name."""
    return {name: format_units(name, units[name]) for name in sorted(units)}
