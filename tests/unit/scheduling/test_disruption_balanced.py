"""consolidationPolicy Balanced: a consolidation move is made only when its savings, as a fraction of the
NodePool's price, are at least half its disruption, as a fraction of the pool's disruption."""

from __future__ import annotations

from typing import Any

import pytest

from apis.nodeclaim import NodeClaim
from scheduling.disruption import Decision
from scheduling.disruption.balanced import PoolTotals, score
from scheduling.disruption.candidates import node_claims_by_node
from scheduling.disruption.notices import notices
from tests.unit.scheduling.disruption_builders import NOW, Obj, bound, budget_pool, karpenter_node, run

DND = {"karpenter.sh/do-not-disrupt": "true"}
M5_XLARGE, C5_LARGE = 0.192, 0.085


def deletion_cost(eviction_cost: int) -> dict[str, str]:
    """The pod-deletion-cost annotation giving a pod that eviction cost (1 + cost / 2^27)."""
    return {"controller.kubernetes.io/pod-deletion-cost": str((eviction_cost - 1) * 2**27)}


def pool_of_four(policy: str, big_pod_cost: int = 1) -> tuple[list[tuple[Obj, NodeClaim]], list[Obj], Any]:
    """Four m5.xlarge nodes. Three are full (two 1900m pods each) and annotated do-not-disrupt, so only
    `big` is a candidate; its two 500m pods fit on a c5.large at less than half its price."""
    machines = [karpenter_node(f"full{i}", "m5.xlarge", node_annotations=DND) for i in range(3)]
    machines.append(karpenter_node("big", "m5.xlarge"))
    pods = [bound(f"f{i}-{j}", f"full{i}", cpu="1900m") for i in range(3) for j in range(2)]
    annotations = deletion_cost(big_pod_cost) if big_pod_cost != 1 else None
    pods += [bound(f"b{j}", "big", cpu="500m", annotations=annotations) for j in range(2)]
    return machines, pods, budget_pool(disruption={"consolidationPolicy": policy})


def decide_for(policy: str, big_pod_cost: int = 1) -> Decision:
    machines, pods, pool = pool_of_four(policy, big_pod_cost)
    return run(machines, pods, pools=[pool])


def test_the_score_is_the_savings_fraction_over_the_disruption_fraction() -> None:
    result = score("p", savings=1.0, disruption=2.0, totals=PoolTotals(price=10.0, disruption=40.0))
    assert (result.savings_fraction, result.disruption_fraction, result.score) == (0.1, 0.05, 2.0)
    assert result.approved
    assert result.describe() == (
        "score 2.00 >= threshold 0.50 (consolidationThreshold: 2.0, savings 10.0%, disruption 5.0%)"
    )
    assert not score("p", savings=0.0, disruption=1.0, totals=PoolTotals(10.0, 10.0)).approved
    assert not score("p", savings=-1.0, disruption=1.0, totals=PoolTotals(10.0, 10.0)).approved
    assert score("p", savings=1.0, disruption=1.0, totals=PoolTotals(10.0, 10.0)).score == pytest.approx(1.0)


def test_a_replacement_at_less_than_half_the_price_is_approved() -> None:
    command = decide_for("Balanced").command
    assert command is not None
    assert (command.method, command.action) == ("SingleNodeConsolidation", "Replace")
    assert command.replacement_price == pytest.approx(C5_LARGE)
    [scored] = command.scores
    # savings (0.192 - 0.085) of the pool's 4 x 0.192; disruption 1 + 2 pods of the pool's 4 x 3
    assert scored.savings_fraction == pytest.approx((M5_XLARGE - C5_LARGE) / (4 * M5_XLARGE))
    assert scored.disruption_fraction == pytest.approx(3 / 12)
    assert scored.score == pytest.approx(0.557, abs=1e-3)


def test_a_move_disrupting_costly_pods_is_rejected_where_underutilized_would_make_it() -> None:
    # Each of big's pods has eviction cost 4: disruption 1 + 8 = 9 of 18, for 14% of the pool's price.
    assert decide_for("WhenEmptyOrUnderutilized", big_pod_cost=4).command is not None
    decision = decide_for("Balanced", big_pod_cost=4)
    assert decision.command is None
    [why] = [r for r in decision.why("big") if r.method == "SingleNodeConsolidation"]
    assert why.code == "ConsolidationRejected"
    assert why.message == (
        "NodePool default has consolidationPolicy Balanced; the savings are not worth the disruption: "
        "score 0.28 < threshold 0.50 (consolidationThreshold: 2.0, savings 13.9%, disruption 50.0%)"
    )


def test_a_node_whose_deletion_would_be_rejected_is_not_simulated() -> None:
    # Eviction cost 10 each: even deleting big outright saves 25% of the price for 70% of the disruption.
    decision = decide_for("Balanced", big_pod_cost=10)
    assert decision.command is None and decision.simulations == 0
    [why] = [r for r in decision.why("big") if r.method == "SingleNodeConsolidation"]
    assert why.code == "ConsolidationRejected"
    assert "even deleting it with nothing in its place would not do: score 0.36 < threshold 0.50" in why.message


def test_each_move_judged_is_kept_with_the_pools_policy_verdict_and_score() -> None:
    [approved] = decide_for("Balanced").moves
    assert (approved.node_pool, approved.policy, approved.approved) == ("default", "Balanced", True)
    assert approved.score is not None and approved.score.score == pytest.approx(0.557, abs=1e-3)
    rejected = decide_for("Balanced", big_pod_cost=4).moves
    assert [(m.approved, round(m.score.score, 2)) for m in rejected if m.score] == [(False, 0.28)]
    [best_case] = decide_for("Balanced", big_pod_cost=10).moves  # not simulated: its deletion was judged
    assert not best_case.approved and best_case.score is not None and round(best_case.score.score, 2) == 0.36
    assert decide_for("WhenEmptyOrUnderutilized").moves == []  # no Balanced pool: no move is judged


def test_empty_nodes_of_a_balanced_pool_are_deleted_unscored() -> None:
    machines = [karpenter_node("busy", "m5.xlarge"), karpenter_node("idle", "m5.xlarge")]
    decision = run(
        machines, [bound("a", "busy", cpu="3")], pools=[budget_pool(disruption={"consolidationPolicy": "Balanced"})]
    )
    command = decision.command
    assert command is not None and command.method == "Emptiness" and command.scores == []


def test_a_balanced_multi_node_merge_carries_its_score() -> None:
    machines = [karpenter_node(f"n{i}", "m5.xlarge") for i in range(1, 4)]
    pods = [bound(f"p{i}", f"n{i}", cpu="1") for i in range(1, 4)]
    decision = run(machines, pods, pools=[budget_pool(disruption={"consolidationPolicy": "Balanced"})])
    command = decision.command
    assert command is not None and command.method == "MultiNodeConsolidation"
    [scored] = command.scores
    assert scored.approved and scored.disruption_fraction == pytest.approx(1.0)


def test_events_say_which_moves_were_approved_and_rejected() -> None:
    def events(decision: Decision, machines: list[tuple[Obj, NodeClaim]], pool: Any) -> list[tuple[str, str, str]]:
        claims = node_claims_by_node([n for n, _ in machines], [c for _, c in machines])
        return [(n.node, n.reason, n.message) for n in notices(decision, claims, {pool.name: pool}, NOW)]

    machines, pods, pool = pool_of_four("Balanced")
    [approved] = events(run(machines, pods, pools=[pool]), machines, pool)
    assert approved[:2] == ("big", "ConsolidationApproved")
    assert approved[2].startswith("score 0.56 >= threshold 0.50")
    machines, pods, pool = pool_of_four("Balanced", big_pod_cost=4)
    [rejected] = events(run(machines, pods, pools=[pool]), machines, pool)
    assert rejected[:2] == ("big", "ConsolidationRejected")
    assert "score 0.28 < threshold 0.50" in rejected[2]
