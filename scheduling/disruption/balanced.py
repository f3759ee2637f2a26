"""Karpenter's `Balanced` consolidation policy: a consolidation move is made only when what it saves is
worth the pods it disrupts, both measured against the NodePool the nodes belong to. Pure.

For each NodePool with `consolidationPolicy: Balanced` among a move's candidates:

    savings_fraction    = savings / the pool's total price
    disruption_fraction = disruption / the pool's total disruption
    score               = savings_fraction / disruption_fraction; approved when score >= 1/k, k = 2

- A node's disruption is 1 for the node itself plus the eviction cost of each pod that would be evicted,
  a negative cost counting as 0 (`scheduling.disruption.candidates.eviction_cost`: 1 per pod unless its
  `controller.kubernetes.io/pod-deletion-cost` or priority says otherwise). A pool's totals sum all its
  nodes whose price is known, candidates or not.
- Savings are the candidates' price less the replacement's (its cheapest option). A move across pools
  gives each pool a share of the savings in proportion to its candidates' price, and every Balanced pool
  of the move must approve. A move that saves nothing scores 0.
- WhenEmpty and WhenEmptyOrUnderutilized pools are not scored, nor is emptiness (deleting nodes that
  have no pod to evict), nor drift.
- Before a single node is simulated, its best case is scored: deleting it with nothing in its place. A
  replacement saves less than that, so a node whose deletion would be rejected is not simulated.
- Each move judged (one with a Balanced pool among its candidates, the best case above included) gives
  each pool among its candidates a `MoveVerdict`: the move's verdict, the pool's policy, and the pool's
  score when it is Balanced (a pool that is not is not scored, and counts as approving, as in Karpenter).

With every pod at the default cost, a node running the pool's average number of pods is replaced only by
one costing at most half as much. k is fixed at 2, as in Karpenter 1.14, whose NodePool has no field for
it. See https://karpenter.sh/docs/concepts/disruption/#consolidation and the design, "Balanced
Consolidation: Scoring Moves by Savings and Disruption", in kubernetes-sigs/karpenter's `designs/`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from scheduling.disruption.candidates import NodeState, eviction_cost
from scheduling.disruption.model import Command, MoveScore, MoveVerdict

BALANCED = "Balanced"
CONSOLIDATION_REJECTED = "ConsolidationRejected"  # the rejection's code, and Karpenter's event reason
CONSOLIDATION_THRESHOLD = 2  # Karpenter's k
THRESHOLD = 1 / CONSOLIDATION_THRESHOLD


@dataclass(frozen=True)
class PoolTotals:
    """What a NodePool's nodes cost per hour, and their disruption, summed over those with a known price."""

    price: float = 0.0
    disruption: float = 0.0


def is_balanced(state: NodeState) -> bool:
    return state.pool is not None and state.pool.spec.disruption.consolidation_policy == BALANCED


def node_disruption(state: NodeState) -> float:
    """1 for the node plus each reschedulable pod's eviction cost, negative costs counting as 0."""
    return 1.0 + sum(max(0.0, eviction_cost(pod)) for pod in state.reschedulable)


def pool_totals(states: Sequence[NodeState]) -> dict[str, PoolTotals]:
    """Each NodePool's totals over all its nodes with a known, positive price."""
    totals: dict[str, PoolTotals] = {}
    for state in states:
        pool = state.pool_name
        if not pool or not state.price:
            continue
        seen = totals.get(pool, PoolTotals())
        totals[pool] = PoolTotals(seen.price + state.price, seen.disruption + node_disruption(state))
    return totals


def score(pool: str, savings: float, disruption: float, totals: PoolTotals | None) -> MoveScore:
    """One pool's score for a move saving `savings` per hour and disrupting `disruption`. A pool with no
    priced node, or a move saving nothing, scores 0."""
    totals = totals or PoolTotals()
    savings_fraction = savings / totals.price if totals.price > 0 else 0.0
    disruption_fraction = disruption / totals.disruption if totals.disruption > 0 else 0.0
    value = savings_fraction / disruption_fraction if savings > 0 and disruption_fraction > 0 else 0.0
    return MoveScore(
        node_pool=pool,
        score=value,
        savings_fraction=savings_fraction,
        disruption_fraction=disruption_fraction,
        threshold=THRESHOLD,
    )


def score_move(
    candidates: Sequence[NodeState], replacement_price: float, totals: Mapping[str, PoolTotals]
) -> list[MoveScore]:
    """The scores of a move deleting the candidates (all of known price) and launching a replacement
    costing `replacement_price` (0 for none), one per Balanced pool among them, by pool name."""
    by_pool: dict[str, list[NodeState]] = {}
    for state in candidates:
        by_pool.setdefault(state.pool_name or "", []).append(state)
    price = sum(state.price or 0.0 for state in candidates)
    savings = price - replacement_price
    scores = []
    for pool, states in sorted(by_pool.items()):
        if not is_balanced(states[0]):
            continue
        share = savings
        if len(by_pool) > 1 and price > 0:
            share = savings * sum(s.price or 0.0 for s in states) / price
        scores.append(score(pool, share, sum(node_disruption(s) for s in states), totals.get(pool)))
    return scores


def best_case(state: NodeState, totals: Mapping[str, PoolTotals]) -> MoveScore | None:
    """The score of deleting this Balanced node with no replacement, the most any move of it can score;
    None when its price is unknown."""
    if state.price is None:
        return None
    return score(state.pool_name or "", state.price, node_disruption(state), totals.get(state.pool_name or ""))


class Judged(NamedTuple):
    """A consolidation command as the policy left it: `command` (with its scores) when approved, else None
    with the rejection's `code` and `why`; `moves`, each pool's part when a candidate's pool is Balanced."""

    command: Command | None
    code: str = ""
    why: str = ""
    moves: Sequence[MoveVerdict] = ()


def scored(command: Command, candidates: Sequence[NodeState], totals: Mapping[str, PoolTotals]) -> Judged:
    """The consolidation command with its scores when a candidate's pool is Balanced (unchanged, and no
    move judged, when none is), or rejected when one of those pools rejects it or a price is unknown."""
    if not any(is_balanced(s) for s in candidates):
        return Judged(command)
    if command.price is None:
        return Judged(None, "UnknownPrice", "the price of the current node(s) is unknown: cannot score the move")
    scores = score_move(candidates, command.replacement_price or 0.0, totals)
    rejected = next((s for s in scores if not s.approved), None)
    moves = verdicts(candidates, scores, approved=rejected is None)
    if rejected is not None:
        return Judged(None, CONSOLIDATION_REJECTED, _why(rejected.node_pool, rejected.describe()), moves)
    return Judged(command.model_copy(update={"scores": scores}), moves=moves)


def hopeless(state: NodeState, totals: Mapping[str, PoolTotals]) -> tuple[str, list[MoveVerdict]]:
    """Why no move of this node can pass when its pool is Balanced (even deleting it outright would be
    rejected), with that deletion's verdict; ("", []) when one might or its pool is not Balanced."""
    best = best_case(state, totals) if is_balanced(state) else None
    if best is None or best.approved:
        return "", []
    why = _why(best.node_pool, f"even deleting it with nothing in its place would not do: {best.describe()}")
    return why, verdicts([state], [best], approved=False)


def verdicts(candidates: Sequence[NodeState], scores: Sequence[MoveScore], approved: bool) -> list[MoveVerdict]:
    """One per NodePool among a judged move's candidates, by name: the move's verdict, the pool's policy,
    and its score when it has one."""
    by_pool = {s.node_pool: s for s in scores}
    policies = {s.pool_name or "": s.pool.spec.disruption.consolidation_policy if s.pool else "" for s in candidates}
    return [
        MoveVerdict(node_pool=pool, policy=policy, approved=approved, score=by_pool.get(pool))
        for pool, policy in sorted(policies.items())
    ]


def _why(pool: str, why: str) -> str:
    return f"NodePool {pool} has consolidationPolicy Balanced; the savings are not worth the disruption: {why}"
