"""scheduling.disruption.notices: the Consolidatable condition each NodeClaim should carry, and which
rejections become Unconsolidatable or DisruptionBlocked events."""

from __future__ import annotations

from datetime import timedelta

from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from scheduling.disruption.candidates import node_claims_by_node
from scheduling.disruption.notices import (
    ConditionChange,
    consolidatable_changes,
    consolidatable_condition,
    notices,
)
from tests.unit.scheduling.disruption_builders import NOW, bound, budget_pool, karpenter_node, pdb, run

DND = "karpenter.sh/do-not-disrupt"


def with_condition(claim: NodeClaim, status: str, reason: str, message: str) -> NodeClaim:
    obj = claim.to_kube()
    obj["metadata"]["uid"] = "uid-1"
    obj["status"]["conditions"].append(
        {"type": "Consolidatable", "status": status, "reason": reason, "message": message, "lastTransitionTime": "x"}
    )
    return NodeClaim.model_validate(obj)


def test_consolidatable_counts_consolidate_after_from_the_last_pod_event() -> None:
    pool = budget_pool(disruption={"consolidateAfter": "30m"})
    _, claim = karpenter_node("n", "m5.large", last_pod_event=NOW - timedelta(minutes=10))
    assert consolidatable_condition(claim, pool, NOW) == (
        "False",
        "ConsolidateAfter",
        "consolidateAfter 30m counts from the last pod event at 2026-01-05T11:50:00Z: "
        "consolidatable from 2026-01-05T12:20:00Z",
    )
    assert consolidatable_condition(claim, pool, NOW + timedelta(minutes=20)) == ("True", "Consolidatable", "")
    _, quiet = karpenter_node("q", "m5.large")  # no pod event: counts from initialization, an hour ago
    assert consolidatable_condition(quiet, pool, NOW) == ("True", "Consolidatable", "")


def test_no_condition_without_consolidation_or_before_initialization() -> None:
    _, claim = karpenter_node("n", "m5.large")
    assert consolidatable_condition(claim, budget_pool(disruption={"consolidateAfter": "Never"}), NOW) is None
    _, young = karpenter_node("y", "m5.large", initialized=False)
    assert consolidatable_condition(young, budget_pool(), NOW) is None


def test_only_claims_whose_condition_should_change_are_written() -> None:
    pool = budget_pool(disruption={"consolidateAfter": "30m"})
    pools: dict[str, NodePool] = {"default": pool}
    _, waiting = karpenter_node("w", "m5.large", last_pod_event=NOW - timedelta(minutes=10))
    [change] = consolidatable_changes([waiting], pools, NOW)
    assert change.value is not None and change.value[0] == "False" and change.node_pool == "default"
    written = with_condition(waiting, *change.value)
    assert consolidatable_changes([written], pools, NOW + timedelta(minutes=5)) == []  # still waiting: no write
    [ripe] = consolidatable_changes([written], pools, NOW + timedelta(minutes=25))
    assert ripe == ConditionChange(written.name, "uid-1", "default", ("True", "Consolidatable", ""))
    off: dict[str, NodePool] = {"default": budget_pool(disruption={"consolidateAfter": "Never"})}
    [removed] = consolidatable_changes([written], off, NOW)
    assert removed.value is None
    assert consolidatable_changes([written], {}, NOW) == []  # its pool is gone: left alone


def test_no_cheaper_replacement_and_consolidation_off_are_unconsolidatable() -> None:
    machines = [karpenter_node("small", "c5.large")]
    decision = run(machines, [bound("a", "small", cpu="1500m", memory="1Gi")])
    claims = node_claims_by_node([n for n, _ in machines], [c for _, c in machines])
    pools = {"default": budget_pool()}
    assert [(n.node, n.node_claim, n.reason, n.message) for n in notices(decision, claims, pools, NOW)] == [
        (
            "small",
            "claim-small",
            "Unconsolidatable",
            "no cheaper replacement: cheapest option c5.large at $0.0850/h vs current $0.0850/h",
        )
    ]
    off = budget_pool(disruption={"consolidateAfter": "Never"})
    decision = run(machines, [bound("a", "small", cpu="1500m")], pools=[off])
    [notice] = notices(decision, claims, {"default": off}, NOW)
    assert (notice.reason, notice.message) == ("Unconsolidatable", "NodePool default has consolidateAfter: Never")


def test_waiting_for_consolidate_after_and_do_not_disrupt_are_not_events() -> None:
    pool = budget_pool(disruption={"consolidateAfter": "1h"})
    machines = [karpenter_node("big", "m5.4xlarge", last_pod_event=NOW - timedelta(minutes=10))]
    claims = node_claims_by_node([n for n, _ in machines], [c for _, c in machines])
    decision = run(machines, [bound("a", "big", cpu="500m")], pools=[pool])
    assert notices(decision, claims, {"default": pool}, NOW) == []
    ripe = [karpenter_node("big", "m5.4xlarge")]
    decision = run(ripe, [bound("a", "big", cpu="500m", annotations={DND: "true"})], pools=[budget_pool()])
    assert notices(decision, claims, {"default": budget_pool()}, NOW) == []


def test_a_blocking_pdb_is_reported_only_once_consolidation_would_take_the_node() -> None:
    budgets = [pdb("web", {"app": "web"}, 0)]
    pod = bound("a", "big", cpu="500m", labels={"app": "web"})
    for last_pod_event, policy, expected in [
        (None, "WhenEmptyOrUnderutilized", ["DisruptionBlocked"]),
        (NOW - timedelta(minutes=1), "WhenEmptyOrUnderutilized", []),  # consolidateAfter not elapsed
        (None, "WhenEmpty", []),  # the node has pods: the policy leaves it alone anyway
    ]:
        pool = budget_pool(disruption={"consolidateAfter": "5m", "consolidationPolicy": policy})
        machines = [karpenter_node("big", "m5.4xlarge", last_pod_event=last_pod_event)]
        claims = node_claims_by_node([n for n, _ in machines], [c for _, c in machines])
        decision = run(machines, [pod], pools=[pool], pod_disruption_budgets=budgets)
        found = notices(decision, claims, {"default": pool}, NOW)
        assert [n.reason for n in found] == expected
        assert all("PodDisruptionBudget default/web" in n.message for n in found)
