"""Why a pod cannot go to a NodePool, in words a user can act on."""

from __future__ import annotations

from collections.abc import Mapping

from apis.quantity import format_resource_list
from scheduling.pools import Pool
from scheduling.requirements import Requirements


def describe_resources(resources: Mapping[str, int]) -> str:
    """`cpu=1, memory=2Gi, pods=1`."""
    return ", ".join(f"{k}={v}" for k, v in format_resource_list(resources).items())


def no_type_reason(pool: Pool, reqs: Requirements) -> str:
    """Which requirements exclude the pool's instance types (the three that exclude most)."""
    if not pool.options:
        return "no instance type is offered (check the catalog and the node class's zones)"
    mismatches: dict[str, int] = {}
    reqs = pool.type_reqs(reqs)
    for option in pool.options:
        key = option.label_mismatch(reqs)
        if key is None and not option.compatible_offers(reqs):
            key = "offerings (zone/capacity type)"
        if key:
            mismatches[key] = mismatches.get(key, 0) + 1
    worst = sorted(mismatches.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    detail = ", ".join(f"{key} excludes {count}" for key, count in worst)
    return f"no instance type satisfies the requirements ({detail})"


def limits_reason(pool: Pool, remaining: Mapping[str, int]) -> str:
    left = describe_resources({k: max(0, v) for k, v in remaining.items()})
    return f"limits would be exceeded by every instance type (remaining {left})"
