"""Split consolidation, beyond Karpenter: one underused node replaced by several smaller ones that cost
clearly less. Pure.

Karpenter's consolidation never replaces a node with more than one (single-node consolidation replaces
one with one cheaper, multi-node merges many into at most one). A node that grew large, such as the one
that took every pod of a burst, therefore stays when its pods shrink to a fraction of it and no single
cheaper instance type holds them all: Karpenter's basic scale-out workload (1,000 pods) scaled down to
100 ends on one r8i.96xlarge at $26.67/h where five r5a.12xlarge-sized nodes at about $13/h would do.

`best_split` re-schedules such a node's pods with the provisioning solver once per size cap: the new
nodes restricted to instance types of at most that many vCPUs, for each vCPU count of the catalog below
the node's own, and keeps the cheapest plan that needs at least two new nodes (one new node is single-node
consolidation's business). The disruption decision acts on it only when it saves at least
SPLIT_MIN_SAVING of the node's price: moving every pod of a node is not worth less. Every command the
decision issues lowers the fleet's price, so splits and merges never undo each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apis.instancetype import InstanceType
from apis.quantity import to_resource_list
from scheduling.disruption.candidates import NodeState
from scheduling.disruption.simulate import Simulator, narrowed, option_prices, replacement_capacity_types
from scheduling.types import PlannedNodeClaim

SPLIT_MIN_SAVING = 0.25  # a split must cost at most 75% of the node it replaces


@dataclass(frozen=True)
class Split:
    """The cheapest set of new nodes found for one node's pods, each narrowed to its capacity types and
    priced at its cheapest option; `cap` is the vCPU bound that produced it."""

    replacements: list[PlannedNodeClaim]
    price: float
    cap: int

    def describe(self) -> str:
        kinds: dict[str, int] = {}
        for claim in self.replacements:
            first = claim.instance_types[0] if claim.instance_types else "?"
            kinds[first] = kinds.get(first, 0) + 1
        shapes = ", ".join(f"{count}x {name}" for name, count in sorted(kinds.items()))
        return f"{len(self.replacements)} nodes from {shapes} at ${self.price:.4f}/h"


def vcpus(it: InstanceType) -> int:
    """The instance type's vCPUs in millicores (0 when its capacity names none)."""
    return to_resource_list(it.capacity).get("cpu", 0)


def size_caps(catalog: Sequence[InstanceType], below: int) -> list[int]:
    """The catalog's distinct vCPU counts (millicores) under `below`, largest first."""
    return sorted({v for it in catalog if 0 < (v := vcpus(it)) < below}, reverse=True)


def best_split(
    state: NodeState,
    simulator: Simulator,
    catalog: Sequence[InstanceType],
    by_name: dict[str, InstanceType],
    spot_to_spot: bool,
    out_of_time: Callable[[], bool],
) -> tuple[Split | None, str]:
    """The cheapest split of the node's pods over at least two new nodes (plus room on other nodes), or
    (None, why none)."""
    own = by_name.get(state.instance_type)
    if own is None:
        return None, f"instance type {state.instance_type or '(none)'} is not in the catalog"
    best: Split | None = None
    why = "its pods need no set of two or more smaller nodes"
    sized = [(vcpus(it), it) for it in catalog]  # parsed once, not once per cap
    for cap in size_caps(catalog, vcpus(own)):
        if out_of_time():
            break
        plan = simulator.run([state], [it for size, it in sized if size <= cap])
        if plan.unschedulable or len(plan.node_claims) < 2:
            continue
        priced, unpriced = _priced(plan.node_claims, state, by_name, spot_to_spot)
        if priced is None:
            why = unpriced
            continue
        total = sum(claim.price for claim in priced)
        if best is None or total < best.price:
            best = Split(priced, total, cap)
    return (best, "") if best is not None else (None, why)


def _priced(
    claims: Sequence[PlannedNodeClaim], state: NodeState, by_name: dict[str, InstanceType], spot_to_spot: bool
) -> tuple[list[PlannedNodeClaim] | None, str]:
    """Each claim narrowed to the capacity types a replacement may use, at its cheapest option; (None, why)
    when one of them has no such option."""
    out = []
    for claim in claims:
        capacity_types, why = replacement_capacity_types(claim, [state], spot_to_spot)
        if not capacity_types:
            return None, why
        options = option_prices(claim, by_name, capacity_types)
        if not options:
            return None, f"no {'/'.join(sorted(capacity_types))} offering for a smaller node"
        out.append(narrowed(claim, options, capacity_types))
    return out, ""
