"""EKS formulas for max pods and node overhead, and instance-type allocatable."""

from __future__ import annotations

import pytest

from apis.instancetype import (
    InstanceType,
    eks_kube_reserved_cpu_millis,
    eks_kube_reserved_memory_mib,
    eks_overhead,
    eni_limited_max_pods,
)


def test_t3_large_max_pods_from_enis() -> None:
    # t3.large: 3 ENIs x 12 IPv4 addresses each.
    assert eni_limited_max_pods(max_enis=3, ipv4_per_eni=12) == 35


def test_kube_reserved_memory_for_35_pods() -> None:
    assert eks_kube_reserved_memory_mib(35) == 11 * 35 + 255 == 640


@pytest.mark.parametrize(("cores", "millis"), [(1, 60), (2, 70), (4, 80), (8, 90), (96, 310)])
def test_kube_reserved_cpu_tiers(cores: int, millis: int) -> None:
    assert eks_kube_reserved_cpu_millis(cores * 1000) == millis


def test_overhead_adds_the_hard_eviction_threshold() -> None:
    assert eks_overhead(cpu_millis=2000, max_pods=35) == {"cpu": "70m", "memory": "740Mi"}


def test_allocatable_is_capacity_minus_overhead() -> None:
    t3_large = InstanceType.model_validate(
        {
            "name": "t3.large",
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": 35},
            "overhead": eks_overhead(2000, 35),
            "offerings": [{"zone": "us-west-2a", "capacityType": "spot", "price": 0.025}],
        }
    )
    assert t3_large.allocatable() == {"cpu": 1930, "memory": 8 * 2**30 - 740 * 2**20, "pods": 35}
    assert t3_large.offerings[0].available
