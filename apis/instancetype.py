"""Instance types and their offerings: the catalog the scheduler chooses from.

The wire format (YAML or JSON, the `--instance-types` catalog of `nodeflow simulate`):

    - name: m5.large
      capacity: {cpu: "2", memory: 8Gi, pods: "29"}
      overhead: {cpu: 70m, memory: 574Mi}        # optional, subtracted from capacity
      labels: {kubernetes.io/arch: amd64}          # optional, selectable
      offerings:
        - {zone: us-west-2a, capacityType: on-demand, price: 0.096, available: true}

Also the EKS formulas for what a node reserves (kube-reserved, eviction threshold) and its pod limit.
"""

from __future__ import annotations

from pydantic import Field

from apis.base import KubeModel
from apis.values.quantity import Quantity, ResourceList, subtract, to_resource_list


class Offering(KubeModel):
    """Where and how the type can be bought. A `reserved` offering is one capacity reservation
    (`reservationID`, `reservationType` default or capacity-block); it is available while the
    reservation has room."""

    zone: str
    capacity_type: str = "on-demand"
    price: float
    available: bool = True
    reservation_id: str | None = Field(default=None, alias="reservationID")
    reservation_type: str | None = None


class InstanceType(KubeModel):
    name: str
    capacity: dict[str, Quantity]
    overhead: dict[str, Quantity] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    offerings: list[Offering] = Field(default_factory=list)

    def allocatable(self) -> ResourceList:
        """Capacity minus overhead, in canonical units (cpu millicores, bytes, counts)."""
        return subtract(to_resource_list(self.capacity), to_resource_list(self.overhead))


MIB = 2**20
EVICTION_HARD_MEMORY_MIB = 100


def eni_limited_max_pods(max_enis: int, ipv4_per_eni: int) -> int:
    """EKS's max pods without prefix delegation: ENIs x (IPv4 per ENI - 1) + 2 (t3.large: 3 x 11 + 2 = 35)."""
    return max_enis * (ipv4_per_eni - 1) + 2


def eks_kube_reserved_memory_mib(max_pods: int) -> int:
    """EKS AMIs reserve 11 MiB per pod plus 255 MiB for the kubelet and container runtime."""
    return 11 * max_pods + 255


def eks_kube_reserved_cpu_millis(cpu_millis: int) -> int:
    """EKS's CPU reservation: 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% of the rest."""
    cores = cpu_millis / 1000
    tiers = ((1.0, 0.06), (1.0, 0.01), (2.0, 0.005), (float("inf"), 0.0025))
    reserved, remaining = 0.0, cores
    for size, rate in tiers:
        take = min(remaining, size)
        if take <= 0:
            break
        reserved += take * rate * 1000
        remaining -= take
    return round(reserved)


def eks_overhead(cpu_millis: int, max_pods: int) -> dict[str, str]:
    """kube-reserved plus the default hard eviction threshold (memory.available<100Mi), as quantities."""
    memory_mib = eks_kube_reserved_memory_mib(max_pods) + EVICTION_HARD_MEMORY_MIB
    return {"cpu": f"{eks_kube_reserved_cpu_millis(cpu_millis)}m", "memory": f"{memory_mib}Mi"}
