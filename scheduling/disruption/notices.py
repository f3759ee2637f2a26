"""What a disruption pass tells users besides its command: each NodeClaim's `Consolidatable` condition and
the events saying why a node cannot be consolidated. Pure; the controller's decide activity writes them.

`Consolidatable` (Karpenter's NodeClaim condition): True once the pool's `consolidateAfter` has elapsed
since the node's pods last changed (`status.lastPodEventTime`, else when the claim initialized); False
while it has not, with the moment it will have; absent when consolidation is off for the pool
(`consolidateAfter: Never`) or the claim is not initialized yet. Karpenter removes the condition instead
of setting it False while waiting; nodeflow sets False with the time so `kubectl describe` says how long.
The message names that moment, not the time left, so the condition changes (and is written) only when
the pods change or the wait ends, not every pass.

Events, as Karpenter v1 emits them on both the Node and its NodeClaim (type Normal):

- `Unconsolidatable`: a consolidation method looked at the node and could not remove or replace it (its
  pods would not fit elsewhere, no cheaper replacement with both prices, more than one replacement
  needed, unknown price, spot-to-spot rules), or its NodePool has consolidation off (`consolidateAfter:
  Never`). Waiting for `consolidateAfter` and the WhenEmpty policy are not reported (the condition says
  the first; the second is the user's choice, and Karpenter is silent on it too).
- `ConsolidationRejected`: the node's NodePool has `consolidationPolicy: Balanced` and removing or
  replacing the node would save too little for the pods it disrupts; the message gives Karpenter's
  "score 0.42 < threshold 0.50 (...)". `ConsolidationApproved`, with the same text, on each node a
  Balanced consolidation command takes. Karpenter records a multi-node move's score on the NodePool;
  nodeflow records approved ones on each node and does not report the rejected prefixes the multi-node
  search tries.
- `DisruptionBlocked`: a PodDisruptionBudget allows no eviction of one of its pods (named with the PDB).
  Reported only for a node consolidation would otherwise take (Consolidatable and a policy that takes
  non-empty nodes), so a busy node is not reported for a PDB that does not matter yet. A pod's
  `karpenter.sh/do-not-disrupt` is not reported: like Karpenter, nodeflow takes it as the user's
  intent (`nodeflow explain` names the pod).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from apis import labels as L
from apis.meta import ConditionStatus, get_condition, rfc3339
from apis.nodeclaim import CONSOLIDATABLE, INITIALIZED, NodeClaim
from apis.nodepool import NodePool
from apis.values.duration import parse_duration
from scheduling.disruption.balanced import CONSOLIDATION_REJECTED
from scheduling.disruption.candidates import claim_consolidatable_since
from scheduling.disruption.model import Decision

UNCONSOLIDATABLE = "Unconsolidatable"
DISRUPTION_BLOCKED = "DisruptionBlocked"
CONSOLIDATION_METHODS = frozenset(
    {"Emptiness", "Consolidation", "MultiNodeConsolidation", "SingleNodeConsolidation", "SplitConsolidation"}
)
UNCONSOLIDATABLE_CODES = frozenset(
    {
        "ConsolidationDisabled",
        "Unschedulable",
        "TooManyReplacements",
        "UnknownPrice",
        "NoReplacement",
        "NotCheaper",
        "SpotToSpotDisabled",
        "SpotToSpotFlexibility",
    }
)
BLOCKED_CODES = frozenset({"PodDisruptionBudget"})
CONSOLIDATION_APPROVED = "ConsolidationApproved"

ConditionValue = tuple[ConditionStatus, str, str]  # (status, reason, message)


@dataclass(frozen=True)
class ConditionChange:
    """The Consolidatable condition of one NodeClaim differs from what it should be. `value` None: remove
    it."""

    node_claim: str
    uid: str
    node_pool: str
    value: ConditionValue | None


@dataclass(frozen=True)
class Notice:
    """One event to record on a Node and on its NodeClaim."""

    node: str
    node_claim: str
    reason: str
    message: str


def consolidatable_condition(claim: NodeClaim, pool: NodePool, now: datetime) -> ConditionValue | None:
    """The Consolidatable condition the claim should have at `now` under its pool (see the module
    docstring); None when it should have none."""
    wait = parse_duration(pool.spec.disruption.consolidate_after)
    if wait is None or not claim.condition_true(INITIALIZED):
        return None
    since = claim_consolidatable_since(claim)
    if since is not None and since + wait > now:
        return (
            "False",
            "ConsolidateAfter",
            f"consolidateAfter {pool.spec.disruption.consolidate_after} counts from the last pod event at "
            f"{rfc3339(since)}: consolidatable from {rfc3339(since + wait)}",
        )
    return "True", CONSOLIDATABLE, ""


def _current(claim: NodeClaim) -> ConditionValue | None:
    condition = get_condition(claim.status.conditions, CONSOLIDATABLE)
    return None if condition is None else (condition.status, condition.reason, condition.message)


def consolidatable_changes(
    claims: Sequence[NodeClaim], pools: Mapping[str, NodePool], now: datetime
) -> list[ConditionChange]:
    """The NodeClaims, by name, whose Consolidatable condition is not what it should be at `now`. Claims
    being deleted, and claims whose NodePool does not exist, are left as they are."""
    changes = []
    for claim in sorted(claims, key=lambda c: c.name):
        pool = pools.get(claim.metadata.labels.get(L.NODEPOOL, ""))
        if pool is None or claim.metadata.deletion_timestamp:
            continue
        wanted = consolidatable_condition(claim, pool, now)
        if wanted != _current(claim):
            changes.append(ConditionChange(claim.name, claim.metadata.uid or "", pool.name, wanted))
    return changes


def notices(
    decision: Decision, claims_by_node: Mapping[str, NodeClaim], pools: Mapping[str, NodePool], now: datetime
) -> list[Notice]:
    """The events the decision calls for, at most one per node and reason, in the decision's order (see
    the module docstring). Nodes without a NodeClaim get none."""
    out: dict[tuple[str, str], Notice] = {}
    for rejection in decision.rejections:
        claim = claims_by_node.get(rejection.node)
        if claim is None:
            continue
        reason = ""
        if rejection.code in UNCONSOLIDATABLE_CODES and rejection.method in CONSOLIDATION_METHODS:
            reason = UNCONSOLIDATABLE
        elif rejection.code == CONSOLIDATION_REJECTED:
            reason = CONSOLIDATION_REJECTED
        elif rejection.code in BLOCKED_CODES and _consolidation_would_take(claim, pools, now):
            reason = DISRUPTION_BLOCKED
        if reason and (rejection.node, reason) not in out:
            out[(rejection.node, reason)] = Notice(rejection.node, claim.name, reason, rejection.message)
    command = decision.command
    scores = {score.node_pool: score for score in command.scores} if command else {}
    for candidate in command.candidates if command else []:
        score = scores.get(candidate.node_pool)
        if score is not None and candidate.node_claim:
            notice = Notice(candidate.node, candidate.node_claim, CONSOLIDATION_APPROVED, score.describe())
            out[(candidate.node, CONSOLIDATION_APPROVED)] = notice
    return list(out.values())


def _consolidation_would_take(claim: NodeClaim, pools: Mapping[str, NodePool], now: datetime) -> bool:
    """The claim is Consolidatable and its pool's policy consolidates nodes with pods."""
    pool = pools.get(claim.metadata.labels.get(L.NODEPOOL, ""))
    if pool is None or pool.spec.disruption.consolidation_policy == "WhenEmpty":
        return False
    wanted = consolidatable_condition(claim, pool, now)
    return wanted is not None and wanted[0] == "True"
