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

from apis import labels as L
from apis.instancetype import InstanceType
from apis.nodepool import NodePool
from apis.values.quantity import to_resource_list
from scheduling.constraints.requirements import Requirements
from scheduling.disruption.candidates import NodeState
from scheduling.disruption.simulate import Simulator, narrowed, option_prices, replacement_capacity_types
from scheduling.provisioning.catalog import OFFERING_KEYS, derived_labels
from scheduling.provisioning.pools import pool_requirements
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


def cheapest_per_unit(catalog: Sequence[InstanceType], pools: Sequence[NodePool]) -> dict[str, float]:
    """For cpu and memory: the lowest $/h per unit of capacity (millicore, byte) of any available offering
    some NodePool could launch: the type's labels and the offering's capacity type meet the pool's
    requirements. Only the labels the type has are checked, and neither zones nor the OS, so the bound
    stays at or below what the solver can find; a pool whose requirements do not parse admits everything.
    Resources nothing offers are left out."""
    try:
        admitted: list[Requirements | None] = [pool_requirements(pool) for pool in pools]
    except ValueError:
        admitted = [None]
    out: dict[str, float] = {}
    for it in catalog:
        capacity = to_resource_list(it.capacity)
        labels = derived_labels(it, capacity)
        for reqs in admitted:
            if reqs is not None and any(
                key in labels and key not in _UNCHECKED and not req.allows(labels[key]) for key, req in reqs.items()
            ):
                continue
            capacity_type = reqs.get_req(L.CAPACITY_TYPE) if reqs is not None else None
            prices = [
                o.price
                for o in it.offerings
                if o.available and (capacity_type is None or capacity_type.allows(o.capacity_type))
            ]
            if not prices:
                continue
            for resource in ("cpu", "memory"):
                amount = capacity.get(resource, 0)
                if amount > 0:
                    ratio = min(prices) / amount
                    out[resource] = min(out.get(resource, ratio), ratio)
    return out


# Requirement keys cheapest_per_unit does not check against a type's labels: the offering's (zone, capacity
# type, zone id; the capacity type is checked per offering) and the node class's OS.
_UNCHECKED = frozenset({*OFFERING_KEYS, L.OS, L.WINDOWS_BUILD})


def split_price_floor(state: NodeState, simulator: Simulator, per_unit: dict[str, float]) -> float:
    """A lower bound on the price of any set of new nodes that, with the free room of the other nodes,
    holds the node's reschedulable pods: for cpu and memory, what the pods request beyond that free room
    at the catalog's cheapest price per unit. 0.0 when the bound cannot be known (NodeClaims in flight
    have room the simulator does not see). Splits costing less than it need not be searched for."""
    if not simulator.exact_check:
        return 0.0
    moving = simulator.moving.get(state.name, {})
    floor = 0.0
    for resource in ("cpu", "memory"):
        need = moving.get(resource, 0) - simulator.free_beside({state.name}, resource)
        if need > 0 and resource in per_unit:
            floor = max(floor, need * per_unit[resource])
    return floor


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
