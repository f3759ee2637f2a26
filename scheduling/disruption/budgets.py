"""NodePool disruption budgets: how many more of a pool's nodes may be disrupted now, per reason. Pure.

As Karpenter v1 computes it (NodePool `GetAllowedDisruptionsByReason`, see
https://karpenter.sh/docs/concepts/disruption/#nodepool-disruption-budgets):

- A budget without `schedule` is always active. One with `schedule` (cron, UTC) and `duration` is active
  when the schedule fired within the last `duration`: a hit in (now - duration, now].
- An active budget allows `nodes` nodes: a count, or a percentage of the pool's nodes rounded UP
  (Karpenter scales the percentage with `intstr.GetScaledValueFromIntOrPercent(..., roundUp=true)`, so
  "10%" of 5 nodes is 1, not 0). An inactive budget does not limit.
- A budget applies to the reasons it lists (Empty, Drifted, Underutilized), or to all when it lists none.
  The most restrictive active budget that applies to a reason sets that reason's allowance.
- The pool's nodes are its initialized nodes; those already being disrupted (deleting, tainted
  `karpenter.sh/disrupted`, or NotReady) are subtracted from the allowance, never below 0.
- A budget whose schedule does not parse fails closed (allows 0), as Karpenter does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

from apis import labels as L
from apis.nodepool import Budget, NodePool
from apis.values.duration import parse_duration
from scheduling.disruption.cron import parse_cron
from scheduling.disruption.model import REASONS, BudgetLimit, Obj, PoolBudget, Reason

UNBOUNDED = 2**31 - 1


def budget_window(budget: Budget, now: datetime) -> tuple[bool, datetime | None, datetime | None]:
    """(active, window start, window end). Unscheduled budgets are always active (no window). Raises
    ValueError on a schedule that does not parse."""
    if budget.schedule is None or budget.duration is None:
        return True, None, None
    length = parse_duration(budget.duration) or timedelta(0)
    fired = parse_cron(budget.schedule).last_fire(now, length)
    if fired is None:
        return False, None, None
    return True, fired, fired + length


def budget_nodes(nodes: str, total: int) -> int:
    """A budget's `nodes` for a pool of `total` nodes: the count, or ceil(percent * total / 100)."""
    if nodes.endswith("%"):
        return math.ceil(int(nodes[:-1]) * total / 100)
    return int(nodes)


def is_disrupting(node: Obj) -> bool:
    """Deleting, tainted karpenter.sh/disrupted, or with a Ready condition that is not True."""
    if (node.get("metadata") or {}).get("deletionTimestamp"):
        return True
    if any(t.get("key") == L.DISRUPTED_TAINT_KEY for t in (node.get("spec") or {}).get("taints") or []):
        return True
    return is_not_ready(node)


def is_not_ready(node: Obj) -> bool:
    """The Node has a Ready condition that is not True (a Node without one yet is not counted)."""
    ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
    return bool(ready) and ready[0].get("status") != "True"


def is_initialized(node: Obj) -> bool:
    return ((node.get("metadata") or {}).get("labels") or {}).get(L.INITIALIZED) == "true"


def pool_budget(pool: NodePool, nodes: Sequence[Obj], now: datetime) -> PoolBudget:
    """The pool's allowance per reason at `now`. `nodes` are Node objects; only the pool's initialized
    ones (label karpenter.sh/nodepool and karpenter.sh/initialized=true) count."""
    mine = [n for n in nodes if ((n.get("metadata") or {}).get("labels") or {}).get(L.NODEPOOL) == pool.name]
    counted = [n for n in mine if is_initialized(n)]
    total = len(counted)
    disrupting = sum(1 for n in counted if is_disrupting(n))
    limits = [_reason_limit(pool, reason, total, disrupting, now) for reason in REASONS]
    return PoolBudget(node_pool=pool.name, total=total, disrupting=disrupting, limits=limits)


def _reason_limit(pool: NodePool, reason: Reason, total: int, disrupting: int, now: datetime) -> BudgetLimit:
    best = BudgetLimit(reason=reason, allowed=UNBOUNDED)
    for index, budget in enumerate(pool.spec.disruption.budgets):
        if budget.reasons and reason not in budget.reasons:
            continue
        try:
            active, start, end = budget_window(budget, now)
            allowed = budget_nodes(budget.nodes, total) if active else UNBOUNDED
        except ValueError:
            active, start, end, allowed = True, None, None, 0
        if not active:
            continue
        if best.budget_index is None or allowed < best.allowed:
            best = BudgetLimit(
                reason=reason,
                allowed=allowed,
                budget_index=index,
                nodes=budget.nodes,
                schedule=budget.schedule,
                duration=budget.duration,
                window_start=start,
                window_end=end,
            )
    if best.budget_index is not None:
        best.allowed = max(0, best.allowed - disrupting)
    return best
