"""Node repair: which unhealthy nodes to force-terminate now. Pure.

As Karpenter v1's node health controller, behind its `NodeRepair` feature gate (see "Node Auto Repair"
in Karpenter's disruption docs, https://karpenter.sh/docs/concepts/disruption/#node-auto-repair):

- A Node is unhealthy while its `Ready` condition is `False` or `Unknown` (a Node without a Ready
  condition is not judged). AWS's repair policy tolerates that for 30 minutes, counted from the
  condition's `lastTransitionTime`; a Node unhealthy that long is repaired: its NodeClaim is terminated
  at once, without draining and without waiting for terminationGracePeriod (its pods cannot be drained
  from a node that does not answer).
- Never more than 20% of a NodePool's nodes: when more of the pool's Nodes are unhealthy (for any time)
  than 20% of its Nodes, rounded up, none of them is repaired, and the pool is reported blocked (an
  unhealthy majority usually means a cause that replacing nodes will not fix, such as the network).
- Only a Node of a NodeClaim of a NodePool is repaired (the Node carries `karpenter.sh/nodepool` and a
  NodeClaim has its name in `status.nodeName`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from apis import labels as L
from apis.meta import as_utc, parse_rfc3339

READY = "Ready"
UNHEALTHY_STATUSES = ("False", "Unknown")
READY_TOLERATION = timedelta(minutes=30)  # AWS's repair policy for the Ready condition
MAX_UNHEALTHY_PERCENT = 20  # Karpenter repairs no node of a pool with more unhealthy nodes than this


@dataclass(frozen=True)
class Repair:
    """One Node to repair: its NodeClaim, NodePool, and why (for the termination reason and events), and the
    Node condition that made it unhealthy."""

    node: str
    node_claim: str
    node_pool: str
    message: str
    condition: str = READY


@dataclass(frozen=True)
class BlockedPool:
    """A NodePool whose unhealthy Nodes exceed the share repair allows: none of them is repaired."""

    node_pool: str
    unhealthy: int
    nodes: int
    allowed: int

    @property
    def message(self) -> str:
        return (
            f"{self.unhealthy} of the NodePool's {self.nodes} nodes are unhealthy, more than "
            f"{MAX_UNHEALTHY_PERCENT}% ({self.allowed}); no node is repaired until fewer are"
        )


@dataclass(frozen=True)
class RepairDecision:
    repairs: tuple[Repair, ...] = ()
    blocked: tuple[BlockedPool, ...] = ()


def ready_condition(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Node's Ready condition, None when it has none."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == READY:
            return condition
    return None


def is_unhealthy(node: Mapping[str, Any]) -> bool:
    """Ready is False or Unknown (for any time)."""
    condition = ready_condition(node)
    return condition is not None and condition.get("status") in UNHEALTHY_STATUSES


def unhealthy_for(node: Mapping[str, Any], now: datetime) -> timedelta | None:
    """How long the Node has been unhealthy (since Ready's lastTransitionTime); None when it is not, or
    when the condition says no readable time."""
    if not is_unhealthy(node):
        return None
    since = parse_rfc3339((ready_condition(node) or {}).get("lastTransitionTime"))
    return None if since is None else max(timedelta(0), as_utc(now) - since)


def allowed_unhealthy(nodes: int) -> int:
    """The most unhealthy Nodes a pool of `nodes` Nodes may have and still be repaired: 20%, rounded up."""
    return -(-nodes * MAX_UNHEALTHY_PERCENT // 100)


def decide_repairs(
    nodes: Sequence[Mapping[str, Any]],
    claims_by_node: Mapping[str, str],
    now: datetime,
    toleration: timedelta = READY_TOLERATION,
) -> RepairDecision:
    """The Nodes to repair now and the pools blocked (see the module docstring), both sorted by name.
    `nodes`: the cluster's Node objects; `claims_by_node`: Node name -> its NodeClaim's name."""
    pools: dict[str, list[Mapping[str, Any]]] = {}
    for node in nodes:
        pool = ((node.get("metadata") or {}).get("labels") or {}).get(L.NODEPOOL)
        if pool:
            pools.setdefault(str(pool), []).append(node)
    repairs: list[Repair] = []
    blocked: list[BlockedPool] = []
    for pool, members in sorted(pools.items()):
        unhealthy = [n for n in members if is_unhealthy(n)]
        if not unhealthy:
            continue
        allowed = allowed_unhealthy(len(members))
        if len(unhealthy) > allowed:
            blocked.append(BlockedPool(pool, len(unhealthy), len(members), allowed))
            continue
        for node in unhealthy:
            name = str((node.get("metadata") or {}).get("name", ""))
            claim = claims_by_node.get(name)
            since = unhealthy_for(node, now)
            if not claim or since is None or since < toleration:
                continue
            status = (ready_condition(node) or {}).get("status")
            minutes = int(since.total_seconds() // 60)
            repairs.append(Repair(name, claim, pool, f"Node {name} has been Ready={status} for {minutes}m"))
    return RepairDecision(tuple(sorted(repairs, key=lambda r: r.node)), tuple(blocked))
