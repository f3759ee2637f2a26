"""Why a pod cannot go to a NodePool, in words a user can act on."""

from __future__ import annotations

from collections.abc import Mapping

from apis import labels as L
from apis.values.quantity import format_resource_list, format_units
from scheduling.constraints.requirements import Requirements
from scheduling.provisioning.pools import Pool
from scheduling.provisioning.targets import Claim


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
    arch = reqs.get(L.ARCH)
    if pool.ami_archs and arch is not None and not any(arch.allows(a) for a in pool.ami_archs):
        archs = ", ".join(sorted(pool.ami_archs))
        wanted = " or ".join(arch.finite() or ["another architecture"])
        detail += (
            f"; EC2NodeClass {pool.node_class} selects AMIs for {archs} only: add an amiSelectorTerms term for {wanted}"
        )
    return f"no instance type satisfies the requirements ({detail})"


def limits_remaining(remaining: Mapping[str, int]) -> str:
    return "remaining " + describe_resources({k: max(0, v) for k, v in remaining.items()})


LIMITS_EXCEEDED = "limits would be exceeded by every instance type"  # a pod left pending by its NodePool's limits


def limits_reason(pool: Pool, remaining: Mapping[str, int]) -> str:
    return f"{LIMITS_EXCEEDED} ({limits_remaining(remaining)})"


def no_room_reason(requests: Mapping[str, int], claim: Claim) -> str:
    """Which requested resources exceed what the largest allowed instance type has free (after the
    daemonset overhead)."""
    matrix = claim.pool.matrix
    short: dict[str, int] = {}
    for name, want in sorted(requests.items()):
        column = matrix.column.get(name)
        have = claim.max_free[column] if column is not None and claim.max_free else 0
        if want > have:
            short[name] = max(0, have)
    if not short:
        detail = "the pod's requests " + describe_resources(requests)
    else:
        missing = [n for n, have in short.items() if have == 0]
        if missing:
            return f"no allowed instance type offers {', '.join(missing)}"
        detail = "; ".join(
            f"{name}: the pod requests {format_units(name, requests[name])}, the largest allowed instance type "
            f"has {format_units(name, have)} free"
            for name, have in short.items()
        )
    overhead = claim.pool.ds_overhead
    suffix = f" (after daemonset overhead {describe_resources(overhead)})" if overhead else ""
    return f"no instance type has room: {detail}{suffix}"
