"""The NodeClaim lifecycle's and the disruption decision's metrics (activities.metrics.registry), each recorded by the
activity that makes the transition, over MemKube and the fake cloud: the phases timed from the NodeClaim's
timestamps once however often the activity runs, nodes counted created, drained and terminated with their
termination and lifetime timed, the decision's counts and gauges. Values are read back through
prometheus-client's text parser, as Prometheus scrapes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from activities.disruption.decision import DisruptionActivities
from activities.metrics.registry import Metrics
from activities.nodeclaim.initialization import InitializationActivities
from activities.nodeclaim.launch import LaunchActivities, MarkLaunchedInput
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from activities.nodeclaim.registration import RegistrationActivities
from activities.nodeclaim.termination import DrainInput, TerminationActivities
from apis.meta import rfc3339
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.fake import Events, MemKube
from scheduling.disruption import CandidateRef, Command, Decision
from scheduling.disruption.model import BudgetLimit, MoveScore, MoveVerdict, PoolBudget
from tests.unit.activities.claimworld import NAME, NODE, as_admin_patch, pod, uid

PROVIDER_ID = "aws:///us-west-2a/i-0123"
M5_LARGE = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}
ZONE_A = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}
POOL = {"nodepool": "default"}
IN_ZONE_B = {"topology.kubernetes.io/zone": "us-west-2b"}


def samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition, by (name, labels)."""
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return samples(metrics).get((name, frozenset(labels.items())))


def ago(seconds: float) -> str:
    return rfc3339(datetime.now(UTC) - timedelta(seconds=seconds))


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


def test_each_phase_is_timed_from_the_claims_creation_once(
    kube: MemKube, cloud: FakeCloudProvider, events: Events, metrics: Metrics
) -> None:
    as_admin_patch(kube, r.NODECLAIM, NAME, {"metadata": {"creationTimestamp": ago(60)}})
    requirements = [*kube.get(r.NODECLAIM, NAME)["spec"]["requirements"], M5_LARGE, ZONE_A]
    as_admin_patch(kube, r.NODECLAIM, NAME, {"spec": {"requirements": requirements}})
    launching = LaunchActivities(kube, cloud, events, "test", metrics=metrics)  # type: ignore[arg-type]
    outcome = launching.launch(ClaimRef(name=NAME))
    launching.mark_launched(MarkLaunchedInput(name=NAME, launch=outcome))
    launching.mark_launched(MarkLaunchedInput(name=NAME, launch=outcome))  # retried: not timed again
    startup = "nodeflow_nodeclaims_startup_duration_seconds"
    assert value(metrics, f"{startup}_count", condition="Launched", **POOL) == 1
    assert 60 <= (value(metrics, f"{startup}_sum", condition="Launched", **POOL) or 0) < 120

    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": PROVIDER_ID}})
    ident = ClaimIdentity(name=NAME, provider_id=PROVIDER_ID, node_name=NODE, node_uid=uid(kube, r.NODE, NODE))
    registration = RegistrationActivities(kube, cloud, events, "test", metrics=metrics)  # type: ignore[arg-type]
    registration.register_node(ident)
    registration.register_node(ident)
    assert value(metrics, f"{startup}_count", condition="Registered", **POOL) == 1
    assert value(metrics, "karpenter_nodes_created_total", **POOL, zone="us-west-2a") == 1  # the claim's zone

    as_admin_patch(kube, r.NODE, NODE, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                   subresource="status")  # fmt: skip
    initialization = InitializationActivities(kube, cloud, events, "test", metrics=metrics)  # type: ignore[arg-type]
    assert initialization.check_initialized(ident).initialized
    initialization.check_initialized(ident)
    assert value(metrics, f"{startup}_count", condition="Initialized", **POOL) == 1


def test_termination_counts_drained_and_terminated_once_and_times_it(
    kube: MemKube, cloud: FakeCloudProvider, events: Events, metrics: Metrics
) -> None:
    registered = {"creationTimestamp": ago(3600), "labels": {"karpenter.sh/nodepool": "default", **IN_ZONE_B},
                  "finalizers": ["karpenter.sh/termination"]}  # fmt: skip
    as_admin_patch(kube, r.NODE, NODE, {"metadata": registered})
    as_admin_patch(kube, r.NODECLAIM, NAME, {"metadata": {"labels": IN_ZONE_B}})
    termination = TerminationActivities(kube, cloud, events, "test", metrics=metrics)  # type: ignore[arg-type]
    termination.drain_step(DrainInput(name=NAME, node_name=NODE))
    termination.drain_step(DrainInput(name=NAME, node_name=NODE))  # drained already: not counted again
    assert value(metrics, "karpenter_nodes_drained_total", **POOL) == 1

    with kube.as_admin():
        kube.delete(r.NODECLAIM, NAME)  # its finalizer keeps it: deleting since now
    terminating = {"type": "InstanceTerminating", "status": "True", "reason": "InstanceTerminating",
                   "message": "i-0123", "lastTransitionTime": ago(30)}  # fmt: skip
    as_admin_patch(kube, r.NODECLAIM, NAME, {"status": {"conditions": [terminating]}}, subresource="status")
    ident = ClaimIdentity(name=NAME, node_name=NODE)
    termination.finalize(ident)
    termination.finalize(ident)  # retried: both are gone
    owner = {"nodepool": "default", "capacity_type": "on-demand"}
    assert value(metrics, "karpenter_nodeclaims_terminated_total", **owner, zone="us-west-2b") == 1
    assert value(metrics, "karpenter_nodes_terminated_total", **POOL, zone="us-west-2b") == 1
    assert value(metrics, "karpenter_nodeclaims_termination_duration_seconds_count", **POOL) == 1
    assert 30 <= (value(metrics, "karpenter_nodeclaims_instance_termination_duration_seconds_sum", **POOL) or 0) < 90
    assert value(metrics, "karpenter_nodes_termination_duration_seconds_count", **POOL) == 1
    assert 3600 <= (value(metrics, "karpenter_nodes_lifetime_duration_seconds_sum", **POOL) or 0) < 3700


def test_drained_pods_count_by_the_claims_disruption_reason_and_evictions_by_response_code(
    kube: MemKube, cloud: FakeCloudProvider, events: Events, metrics: Metrics
) -> None:
    with kube.as_admin():
        for name in ("web-1", "web-2", "guarded"):
            kube.create(r.POD, pod(name))
    kube.refuse_eviction.add("guarded")
    termination = TerminationActivities(kube, cloud, events, "test", metrics=metrics)  # type: ignore[arg-type]
    termination.drain_step(DrainInput(name=NAME, node_name=NODE))
    assert value(metrics, "karpenter_pods_drained_total", reason="Forceful Termination") == 2  # no disruption reason
    assert value(metrics, "karpenter_pods_eviction_requests_total", code="200") == 2
    assert value(metrics, "karpenter_pods_eviction_requests_total", code="429") == 1

    drifted = {"type": "DisruptionReason", "status": "True", "reason": "Drifted", "message": "drifted",
               "lastTransitionTime": ago(5)}  # fmt: skip
    as_admin_patch(kube, r.NODECLAIM, NAME, {"status": {"conditions": [drifted]}}, subresource="status")
    kube.refuse_eviction.clear()
    termination.drain_step(DrainInput(name=NAME, node_name=NODE))
    assert value(metrics, "karpenter_pods_drained_total", reason="Drifted") == 1
    assert value(metrics, "karpenter_pods_eviction_requests_total", code="200") == 3
    assert value(metrics, "karpenter_pods_eviction_requests_total", code="429") == 1


def budget(pool: str, allowed: int) -> PoolBudget:
    limits = [BudgetLimit(reason=reason, allowed=allowed) for reason in ("Empty", "Drifted", "Underutilized")]
    return PoolBudget(node_pool=pool, total=3, disrupting=0, limits=limits)


def test_a_decision_counts_timeouts_and_shows_eligible_nodes_and_budgets(
    kube: MemKube, cloud: FakeCloudProvider, events: Events, metrics: Metrics
) -> None:
    disruption = DisruptionActivities(kube, cloud, events, metrics)  # type: ignore[arg-type]
    candidate = CandidateRef(node=NODE, node_claim=NAME, node_pool="default")
    command = Command(method="MultiNodeConsolidation", reason="Underutilized", action="Replace",
                      candidates=[candidate])  # fmt: skip
    eligible = {"Drifted": 0, "Empty": 1, "Underutilized": 2}
    decision = Decision(command=command, budgets=[budget("default", 1), budget("gone", 2)], eligible=eligible)
    disruption.count(decision)
    disruption.count(decision.model_copy(update={"budgets": [budget("default", 0)], "timed_out": True}))
    assert value(metrics, "karpenter_voluntary_disruption_consolidation_timeouts_total", consolidation_type="") == 1
    assert value(metrics, "karpenter_voluntary_disruption_eligible_nodes", reason="underutilized") == 2
    allowed = "karpenter_nodepools_allowed_disruptions"
    assert value(metrics, allowed, nodepool="default", reason="drifted") == 0
    assert value(metrics, allowed, nodepool="gone", reason="drifted") is None  # its pool is gone
    consuming = "karpenter_nodepools_nodes_consuming_budgets"
    disruption.count(Decision(budgets=[budget("default", 1).model_copy(update={"disrupting": 2})]))
    assert value(metrics, consuming, nodepool="default", reason="underutilized") == 2
    disruption.count(Decision(budgets=[]))
    assert value(metrics, consuming, nodepool="default", reason="underutilized") is None  # no pool: no series


def test_each_pools_part_in_a_judged_move_counts_and_a_balanced_pools_score_is_observed(
    kube: MemKube, cloud: FakeCloudProvider, events: Events, metrics: Metrics
) -> None:
    disruption = DisruptionActivities(kube, cloud, events, metrics)  # type: ignore[arg-type]
    low = MoveScore(node_pool="b", score=0.3, savings_fraction=0.03, disruption_fraction=0.1, threshold=0.5)
    moves = [  # one move across pools b (Balanced, rejecting it) and u (not scored), then an approved one
        MoveVerdict(node_pool="b", policy="Balanced", approved=False, score=low),
        MoveVerdict(node_pool="u", policy="WhenEmptyOrUnderutilized", approved=False),
        MoveVerdict(node_pool="b", policy="Balanced", approved=True, score=low.model_copy(update={"score": 2.0})),
    ]
    disruption.count(Decision(moves=moves))
    balanced = {"nodepool": "b", "policy": "Balanced"}
    moved = "karpenter_consolidation_moves_total"
    assert value(metrics, moved, decision="rejected", **balanced) == 1
    assert value(metrics, moved, decision="approved", **balanced) == 1
    assert value(metrics, moved, decision="rejected", nodepool="u", policy="WhenEmptyOrUnderutilized") == 1
    scored = "karpenter_consolidation_score"
    assert value(metrics, f"{scored}_sum", decision="rejected", **balanced) == pytest.approx(0.3)
    assert value(metrics, f"{scored}_bucket", decision="approved", le="2.0", **balanced) == 1
    unscored = {"nodepool": "u", "policy": "WhenEmptyOrUnderutilized"}
    assert value(metrics, f"{scored}_count", decision="rejected", **unscored) is None
