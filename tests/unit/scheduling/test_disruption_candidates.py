"""Who may be disrupted: do-not-disrupt, PDBs, consolidateAfter, Never, not initialized, disrupting."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from apis.nodeclaim import NodeClaim
from tests.unit.scheduling.disruption_builders import (
    NOW,
    Obj,
    bound,
    budget_pool,
    codes,
    karpenter_node,
    pdb,
    run,
)

DND = "karpenter.sh/do-not-disrupt"


def _one_underutilized(pod_kwargs: dict[str, Any], **node_kwargs: Any) -> tuple[list[tuple[Obj, NodeClaim]], list[Obj]]:
    """One 16-vCPU node running one small pod labelled app=web: consolidation replaces it unless blocked."""
    machines = [karpenter_node("big", "m5.4xlarge", **node_kwargs)]
    return machines, [bound("a", "big", cpu="500m", labels={"app": "web"}, **pod_kwargs)]


@pytest.mark.parametrize(
    ("pod_kwargs", "node_kwargs", "blocked_code"),
    [
        ({"annotations": {DND: "true"}}, {}, "PodDoNotDisrupt"),
        # "30m" counted from the pod's start: started 10 minutes ago, still blocked for 20
        ({"annotations": {DND: "30m"}, "started": NOW - timedelta(minutes=10)}, {}, "PodDoNotDisrupt"),
        # started 40 minutes ago: expired, consolidated
        ({"annotations": {DND: "30m"}, "started": NOW - timedelta(minutes=40)}, {}, None),
        ({"annotations": {DND: "not-a-duration"}}, {}, None),  # invalid values are ignored
        ({"annotations": {DND: "Never"}}, {}, None),  # not a Go duration either
        ({}, {"node_annotations": {DND: "true"}}, "DoNotDisrupt"),
        ({}, {"claim_annotations": {DND: "true"}}, "DoNotDisrupt"),
        ({}, {"initialized": False}, "NotInitialized"),
        ({}, {"deleting": True}, "Disrupting"),
        ({}, {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}, "Disrupting"),
        ({}, {}, None),
    ],
)
def test_blockers(pod_kwargs: dict[str, Any], node_kwargs: dict[str, Any], blocked_code: str | None) -> None:
    machines, pods = _one_underutilized(pod_kwargs, **node_kwargs)
    decision = run(machines, pods, pools=[budget_pool()])
    if blocked_code is None:
        assert decision.command is not None, decision.rejections
        return
    assert decision.command is None
    assert blocked_code in codes(decision, "big")


def test_do_not_disrupt_duration_says_until_when() -> None:
    machines, pods = _one_underutilized({"annotations": {DND: "30m"}, "started": NOW - timedelta(minutes=10)})
    [why] = run(machines, pods, pools=[budget_pool()]).why("big")
    assert why.until == NOW + timedelta(minutes=20)
    assert why.message == f'pod default/a has {DND}: "30m" until 2026-01-05 12:20:00 UTC'


@pytest.mark.parametrize(
    ("pdbs", "blocked"),
    [
        ([pdb("web", {"app": "web"}, 0)], True),
        ([pdb("web", {"app": "web"}, 1)], False),
        ([pdb("other", {"app": "db"}, 0)], False),
        ([pdb("web", {"app": "web"}, 0, namespace="elsewhere")], False),
        ([pdb("web", {"app": "web"}, 1), pdb("web2", {"app": "web"}, 1)], True),  # two PDBs: eviction refused
    ],
)
def test_pdb_blocking(pdbs: list[Obj], blocked: bool) -> None:
    machines, pods = _one_underutilized({})
    decision = run(machines, pods, pools=[budget_pool()], pod_disruption_budgets=pdbs)
    assert (decision.command is None) == blocked
    if blocked:
        assert codes(decision, "big") == ["PodDisruptionBudget"]
        assert "default/a" in decision.why("big")[0].message


def test_pdb_message_names_the_budget() -> None:
    machines, pods = _one_underutilized({})
    decision = run(machines, pods, pools=[budget_pool()], pod_disruption_budgets=[pdb("web", {"app": "web"}, 0)])
    assert decision.why("big")[0].message == "PodDisruptionBudget default/web allows no disruption of pod default/a now"


def test_consolidate_after_not_elapsed() -> None:
    pool = budget_pool(disruption={"consolidateAfter": "1h"})
    machines = [karpenter_node("big", "m5.4xlarge", last_pod_event=NOW - timedelta(minutes=10))]
    decision = run(machines, [bound("a", "big", cpu="500m")], pools=[pool])
    assert decision.command is None
    [why] = decision.why("big")
    assert (why.code, why.method, why.until) == ("ConsolidateAfter", "Consolidation", NOW + timedelta(minutes=50))
    assert "50m0s left" in why.message
    later = run(machines, [bound("a", "big", cpu="500m")], pools=[pool], now=NOW + timedelta(hours=1))
    assert later.command is not None


def test_consolidate_after_applies_to_empty_nodes_too() -> None:
    pool = budget_pool(disruption={"consolidateAfter": "1h"})
    decision = run([karpenter_node("idle", "m5.xlarge", last_pod_event=NOW - timedelta(minutes=5))], [], pools=[pool])
    assert decision.command is None
    assert [(r.method, r.code) for r in decision.why("idle")] == [("Emptiness", "ConsolidateAfter")]


def test_consolidate_after_never_disables_consolidation() -> None:
    pool = budget_pool(disruption={"consolidateAfter": "Never"})
    machines = [karpenter_node("big", "m5.4xlarge"), karpenter_node("idle", "m5.xlarge")]
    decision = run(machines, [bound("a", "big", cpu="500m")], pools=[pool])
    assert decision.command is None
    assert codes(decision, "big") == ["ConsolidationDisabled"]
    assert codes(decision, "idle") == ["ConsolidationDisabled"]


def test_unmanaged_nodes_are_capacity_not_candidates() -> None:
    node, _ = karpenter_node("byo", "m5.4xlarge")
    del node["metadata"]["labels"]["karpenter.sh/nodepool"]
    decision = run([(node, karpenter_node("x", "m5.large")[1])], [bound("a", "byo")], pools=[budget_pool()])
    assert codes(decision, "byo") == ["NotManaged"]
