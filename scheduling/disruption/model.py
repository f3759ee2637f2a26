"""What the disruption decision is given and what it returns. Pure data, JSON-serialisable.

A future `disruption` activity builds a `DisruptionInput` from a fresh snapshot, calls
`scheduling.disruption.decide(...)` and records the `Decision` (the command to execute, if any, and every
node it did not choose with the reason). `nodeflow explain` prints the same `Decision`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from scheduling.types import PlannedNodeClaim, SchedulingInput

Obj = dict[str, Any]
# "Manual": a manual replace (`nodeflow replace`), which no budget limits
Reason = Literal["Empty", "Drifted", "Underutilized", "Manual"]
Method = Literal[
    "Drift", "Emptiness", "MultiNodeConsolidation", "SingleNodeConsolidation", "SplitConsolidation", "Manual"
]
REASONS: tuple[Reason, ...] = ("Empty", "Drifted", "Underutilized")
# The automatic methods in the order a decision tries them (scheduling.disruption.decide).
METHOD_ORDER: tuple[Method, ...] = (
    "Emptiness",
    "Drift",
    "MultiNodeConsolidation",
    "SingleNodeConsolidation",
    "SplitConsolidation",
)


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class Limits(_Model):
    """Bounds on the work of one decision (Karpenter bounds its own with candidate counts and timeouts).

    - multi_node_candidates: multi-node consolidation looks at most at this many candidates (Karpenter: 100).
    - single_node_candidates: single-node consolidation simulates at most this many candidates per decision;
      the rest wait for the next pass (Karpenter instead time-boxes the pass at 3 minutes).
    - split_candidates: split consolidation (beyond Karpenter) tries at most this many nodes per decision.
    - seconds: a wall-clock budget for consolidation simulations; when it runs out the methods stop and the
      decision says `timedOut` (Karpenter: 1 minute for multi-node, 3 for single-node).
    """

    multi_node_candidates: int = 100
    single_node_candidates: int = 20
    split_candidates: int = 2
    seconds: float = 1.5


class DisruptionInput(_Model):
    """A cluster snapshot and the clock.

    - cluster: as the scheduler takes it, with `bound_pods` holding every pod bound to a node (DaemonSet
      pods included) and `pods` (pending pods) ignored. Nodes and NodeClaims are matched by
      `status.nodeName` (else providerID).
    - pod_disruption_budgets: policy/v1 PodDisruptionBudgets as the API serves them (status included).
    - now: the decision time (UTC); every duration and budget window is judged against it.
    - spot_to_spot_consolidation: the `SpotToSpotConsolidation` feature gate.
    - single_node_first: nodes single-node consolidation evaluates first (the previous decision's
      `single_node_skipped`), so a bounded pass does not starve the candidates at the end of the order.
    """

    cluster: SchedulingInput
    pod_disruption_budgets: list[Obj] = Field(default_factory=list)
    now: datetime
    spot_to_spot_consolidation: bool = False
    limits: Limits = Field(default_factory=Limits)
    single_node_first: list[str] = Field(default_factory=list)


class BudgetLimit(_Model):
    """One reason's allowance in one pool: how many more nodes may be disrupted for it now, and which
    budget set it (index into `spec.disruption.budgets`, None when no budget applies to the reason)."""

    reason: Reason
    allowed: int
    budget_index: int | None = None
    nodes: str | None = None  # the budget's `nodes` as written
    schedule: str | None = None
    duration: str | None = None
    window_start: datetime | None = None  # for a scheduled budget: the active window
    window_end: datetime | None = None

    def describe(self, pool: str) -> str:
        if self.budget_index is None:
            return f"NodePool {pool}: no budget limits {self.reason} disruptions"
        window = ""
        if self.schedule is not None:
            window = f' (schedule "{self.schedule}" for {self.duration}, active {_hm(self.window_start)}'
            window += f"-{_hm(self.window_end)} UTC)"
        return (
            f'NodePool {pool}: budget #{self.budget_index} nodes "{self.nodes}"{window} allows '
            f"{self.allowed} more {self.reason} disruption(s)"
        )


def _hm(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%d %H:%M") if when else "?"


class PoolBudget(_Model):
    """A pool's disruption budgets at `now`: its initialized nodes (`total`), those already being disrupted
    (deleting, tainted karpenter.sh/disrupted, or NotReady), and per reason the allowance left."""

    node_pool: str
    total: int
    disrupting: int
    limits: list[BudgetLimit]

    def allowed(self, reason: Reason) -> int:
        return next(limit.allowed for limit in self.limits if limit.reason == reason)

    def limit(self, reason: Reason) -> BudgetLimit:
        return next(limit for limit in self.limits if limit.reason == reason)


class Rejection(_Model):
    """Why a node was not disrupted. `method` is None when no method could take it (not a candidate at
    all), "Consolidation" when no consolidation method could (consolidateAfter, policy). `code` is stable
    for programs; `message` says which pod, PDB, budget or price, for people."""

    node: str
    node_pool: str | None = None
    method: Method | Literal["Consolidation"] | None = None
    code: str
    message: str
    until: datetime | None = None  # when the blocker lapses, when known (do-not-disrupt duration, consolidateAfter)


class CandidateRef(_Model):
    """A node a command disrupts, with what it costs now."""

    node: str
    node_claim: str
    node_pool: str
    instance_type: str = ""
    capacity_type: str = ""
    zone: str = ""
    price: float | None = None
    reschedulable_pods: list[str] = Field(default_factory=list)  # "namespace/name"


class MoveScore(_Model):
    """How the Balanced consolidation policy scored a move for one of its NodePools
    (scheduling.disruption.balanced): the savings and the disruption as fractions of the pool's totals,
    and their ratio, approved at `threshold` or more."""

    node_pool: str
    score: float
    savings_fraction: float
    disruption_fraction: float
    threshold: float

    @property
    def approved(self) -> bool:
        return self.score >= self.threshold

    def describe(self) -> str:
        """Karpenter's event text: "score 0.42 < threshold 0.50 (consolidationThreshold: 2.0, savings
        4.2%, disruption 10.0%)"."""
        sign = ">=" if self.approved else "<"
        return (
            f"score {self.score:.2f} {sign} threshold {self.threshold:.2f} (consolidationThreshold: "
            f"{1 / self.threshold:.1f}, savings {self.savings_fraction:.1%}, disruption {self.disruption_fraction:.1%})"
        )


class MoveVerdict(_Model):
    """One NodePool's part in a consolidation move the Balanced policy judged (one with a Balanced pool
    among its candidates), for Karpenter's `karpenter_consolidation_moves_total` and
    `karpenter_consolidation_score`: the move's verdict (every Balanced pool of it must approve), the
    pool's consolidationPolicy, and its own score (None for a pool that is not Balanced: not scored)."""

    node_pool: str
    policy: str
    approved: bool
    score: MoveScore | None = None


class Command(_Model):
    """One disruption: delete the candidates (after launching `replacements`, when any, and waiting for
    them to initialize). `price` is the candidates' total, `replacement_price` the replacements' cheapest."""

    method: Method
    reason: Reason
    action: Literal["Delete", "Replace"]
    candidates: list[CandidateRef]
    replacements: list[PlannedNodeClaim] = Field(default_factory=list)
    price: float | None = None
    replacement_price: float | None = None
    message: str = ""
    scores: list[MoveScore] = Field(default_factory=list)  # one per Balanced NodePool among the candidates


class Decision(_Model):
    """The outcome of one pass: at most one command, why every other node was left alone, the budgets."""

    command: Command | None = None
    rejections: list[Rejection] = Field(default_factory=list)
    budgets: list[PoolBudget] = Field(default_factory=list)
    simulations: int = 0
    timed_out: bool = False
    single_node_skipped: list[str] = Field(default_factory=list)  # pass as the next input's single_node_first
    # Per reason, the nodes a method for it could take (before budgets): drifted candidates for Drifted,
    # consolidatable ones for Underutilized, the empty among those for Empty.
    eligible: dict[str, int] = Field(default_factory=dict)
    moves: list[MoveVerdict] = Field(default_factory=list)  # each pool's part in each move Balanced judged

    def why(self, node: str) -> list[Rejection]:
        """Every reason recorded for that node (empty when it was chosen or never looked at)."""
        return [r for r in self.rejections if r.node == node]

    def describe(self, node: str | None = None) -> str:
        """The decision as text for people (`nodeflow explain`): the command, each pool's allowances, then
        one line per rejection (only `node`'s when given)."""
        lines = [f"command: {self.command.method} {self.command.action}: {self.command.message}" if self.command
                 else "command: none"]  # fmt: skip
        if self.timed_out:
            lines.append("the pass ran out of time; some candidates were not evaluated")
        for budget in self.budgets:
            lines.append(f"NodePool {budget.node_pool}: {budget.total} node(s), {budget.disrupting} disrupting")
            lines.extend(f"  {limit.describe(budget.node_pool)}" for limit in budget.limits)
        for rejection in self.rejections if node is None else self.why(node):
            where = rejection.method or "candidate"
            lines.append(f"{rejection.node} [{where}] {rejection.code}: {rejection.message}")
        return "\n".join(lines)
