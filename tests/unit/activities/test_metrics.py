"""activities.metrics.registry: Karpenter's metric names, types and labels in the exposition Prometheus scrapes, and
each count made where the work happens (activities over MemKube and the fake cloud): a NodeClaim created
or terminated counts once however often its activity is retried, a disruption once per candidate, every
cloud-provider call is timed and its errors counted by type."""

from __future__ import annotations

import pytest
from prometheus_client import Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from activities.disruption.execution import AbortInput, DisruptionExecution, LaunchReplacementsInput, StartInput
from activities.metrics.metered_cloud import MeteredCloudProvider
from activities.metrics.registry import Metrics
from activities.metrics.summary import WindowedSummary
from activities.nodeclaim.models import ClaimIdentity
from activities.nodeclaim.termination import BeginTerminationInput, TerminationActivities
from activities.provisioning.models import ProvisionRound
from apis.instancetype import InstanceType, Offering
from cloudprovider.errors import InstanceNotFoundError
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.fake import Events, MemKube
from scheduling.disruption import CandidateRef, Command
from scheduling.types import PlannedNodeClaim
from tests.unit.activities.claimworld import NAME, NODE

NODE_RESOURCE_LABELS = {
    "node_name",
    "nodepool",
    "resource_type",
    "instance_type",
    "capacity_type",
    "zone",
    "arch",
    "os",
}
# The name (as scraped), type and labels of every metric nodeflow exports: Karpenter's where nodeflow means
# the same thing, `nodeflow_` where Karpenter has none.
EXPORTED = {
    "karpenter_nodeclaims_created_total": ("counter", {"reason", "nodepool", "min_values_relaxed"}),
    "karpenter_nodeclaims_terminated_total": ("counter", {"nodepool", "capacity_type", "zone"}),
    "karpenter_nodeclaims_disrupted_total": ("counter", {"reason", "nodepool", "capacity_type"}),
    "karpenter_nodeclaims_termination_duration_seconds": ("histogram", {"nodepool"}),
    "karpenter_nodeclaims_instance_termination_duration_seconds": ("histogram", {"nodepool"}),
    "nodeflow_nodeclaims_startup_duration_seconds": ("histogram", {"condition", "nodepool"}),
    "nodeflow_disruption_settled_looks_total": ("counter", set()),
    "karpenter_nodes_created_total": ("counter", {"nodepool", "zone"}),
    "karpenter_nodes_terminated_total": ("counter", {"nodepool", "zone"}),
    "karpenter_nodes_drained_total": ("counter", {"nodepool"}),
    "karpenter_nodes_termination_duration_seconds": ("summary", {"nodepool"}),
    "karpenter_nodes_lifetime_duration_seconds": ("histogram", {"nodepool"}),
    "karpenter_nodes_allocatable": ("gauge", NODE_RESOURCE_LABELS),
    **{
        f"karpenter_nodes_{name}": ("gauge", NODE_RESOURCE_LABELS)
        for name in (
            "total_pod_requests",
            "total_pod_limits",
            "total_daemon_requests",
            "total_daemon_limits",
            "system_overhead",
        )
    },
    "karpenter_nodes_current_lifetime_seconds": (
        "gauge",
        {"node_name", "nodepool", "instance_type", "capacity_type", "zone", "arch", "os"},
    ),
    "karpenter_cluster_state_node_count": ("gauge", set()),
    "karpenter_cluster_state_synced": ("gauge", set()),
    "karpenter_cluster_state_unsynced_time_seconds": ("gauge", set()),
    "karpenter_cluster_utilization_percent": ("gauge", {"resource_type"}),
    "karpenter_nodepools_usage": ("gauge", {"nodepool", "resource_type"}),
    "karpenter_nodepools_limit": ("gauge", {"nodepool", "resource_type"}),
    "karpenter_nodepools_allowed_disruptions": ("gauge", {"nodepool", "reason"}),
    "karpenter_nodepools_nodes_consuming_budgets": ("gauge", {"nodepool", "reason"}),
    "karpenter_nodeclaims_unhealthy_disrupted_total": (
        "counter",
        {"condition", "nodepool", "capacity_type", "image_id"},
    ),
    "karpenter_pods_state": (
        "gauge",
        {"name", "namespace", "owner", "node", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase"},
    ),
    "karpenter_pods_drained_total": ("counter", {"reason"}),
    "karpenter_pods_eviction_requests_total": ("counter", {"code"}),
    "karpenter_pods_startup_duration_seconds": ("summary", set()),
    "karpenter_pods_bound_duration_seconds": ("histogram", set()),
    "karpenter_pods_unbound_time_seconds": ("gauge", {"name", "namespace"}),
    "karpenter_pods_unstarted_time_seconds": ("gauge", {"name", "namespace"}),
    "karpenter_scheduler_scheduling_duration_seconds": ("histogram", {"controller"}),
    "karpenter_scheduler_queue_depth": ("gauge", {"controller"}),
    "karpenter_scheduler_unschedulable_pods_count": ("gauge", {"controller"}),
    "karpenter_scheduler_ignored_pods_count": ("gauge", set()),
    "karpenter_cloudprovider_duration_seconds": ("histogram", {"controller", "method", "provider"}),
    "karpenter_cloudprovider_errors_total": ("counter", {"controller", "method", "provider", "error"}),
    "karpenter_cloudprovider_batcher_batch_size": ("histogram", {"batcher"}),
    "karpenter_cloudprovider_batcher_batch_time_seconds": ("histogram", {"batcher"}),
    "karpenter_cloudprovider_instance_launch_failures_total": (
        "counter",
        {"zone", "zone_id", "capacity_type", "reason"},
    ),
    "karpenter_cloudprovider_instance_type_offering_available": ("gauge", {"instance_type", "capacity_type", "zone"}),
    "karpenter_cloudprovider_instance_type_offering_price_estimate": (
        "gauge",
        {"instance_type", "capacity_type", "zone"},
    ),
    "karpenter_cloudprovider_instance_type_cpu_cores": ("gauge", {"instance_type"}),
    "karpenter_cloudprovider_instance_type_memory_bytes": ("gauge", {"instance_type"}),
    "karpenter_voluntary_disruption_decisions_total": ("counter", {"decision", "reason", "consolidation_type"}),
    "karpenter_voluntary_disruption_decisions_by_nodepool_total": (
        "counter",
        {"nodepool", "decision", "reason", "consolidation_type"},
    ),
    "karpenter_voluntary_disruption_eligible_nodes": ("gauge", {"reason"}),
    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds": (
        "histogram",
        {"method", "consolidation_type"},
    ),
    "karpenter_voluntary_disruption_consolidation_timeouts_total": ("counter", {"consolidation_type"}),
    "karpenter_voluntary_disruption_failed_validations_total": ("counter", {"consolidation_type"}),
    "karpenter_voluntary_disruption_queue_failures_total": ("counter", {"decision", "reason", "consolidation_type"}),
    "karpenter_build_info": ("gauge", {"version", "goversion", "goarch", "commit"}),
    "karpenter_consolidation_moves_total": ("counter", {"decision", "nodepool", "policy"}),
    "karpenter_consolidation_score": ("histogram", {"decision", "nodepool", "policy"}),
    "karpenter_interruption_received_messages_total": ("counter", {"message_type"}),
    "karpenter_interruption_deleted_messages_total": ("counter", set()),
    "karpenter_interruption_message_queue_duration_seconds": ("histogram", set()),
    **{
        f"operator_{kind}_status_condition_{name}": spec
        for kind in ("nodeclaim", "nodepool", "node", "ec2nodeclass")
        for name, spec in (
            ("count", ("gauge", {"namespace", "name", "type", "status", "reason"})),
            ("current_status_seconds", ("gauge", {"namespace", "name", "type", "status", "reason"})),
            ("transitions_total", ("counter", {"type", "status", "reason"})),
            ("transition_seconds", ("histogram", {"type", "status", "to_status"})),
        )
    },
}


def _touch_every_metric(metrics: Metrics) -> None:
    """One sample of each metric, every label set to `x` (the catalog's gauges: a catalog of one type)."""
    metrics.catalog.show(
        [
            InstanceType(
                name="x",
                capacity={"cpu": "1", "memory": "1Gi"},
                offerings=[Offering(zone="x", capacity_type="x", price=1)],
            )
        ]
    )
    collectors = [*vars(metrics).values(), *(c for kind in metrics.conditions.values() for c in vars(kind).values())]
    for collector in collectors:
        if isinstance(collector, WindowedSummary):
            collector.labels(**dict.fromkeys(collector.labelnames, "x")).observe(1)
        if not isinstance(collector, Counter | Gauge | Histogram):
            continue
        names = collector._labelnames
        child = collector.labels(**dict.fromkeys(names, "x")) if names else collector
        if isinstance(child, Counter):
            child.inc()
        elif isinstance(child, Gauge):
            child.set(1)
        else:
            child.observe(1)


def exposition(metrics: Metrics) -> dict[str, tuple[str, set[frozenset[str]], set[str]]]:
    """Family name -> (type, the label-name sets of its samples without `le` and `quantile`, its sample names), as
    Prometheus's text parser reads the registry."""
    text = generate_latest(metrics.registry).decode()
    found: dict[str, tuple[str, set[frozenset[str]], set[str]]] = {}
    for family in text_string_to_metric_families(text):
        found[family.name] = (
            family.type,
            {frozenset(s.labels) - {"le", "quantile"} for s in family.samples},
            {s.name for s in family.samples},
        )
    return found


def test_the_exposition_has_karpenters_names_types_and_labels() -> None:
    metrics = Metrics()
    _touch_every_metric(metrics)
    found = exposition(metrics)
    assert len(found) == len(EXPORTED), sorted(set(found) ^ {n.removesuffix("_total") for n in EXPORTED})
    for name, (kind, labels) in EXPORTED.items():
        family_name = name.removesuffix("_total") if kind == "counter" else name
        assert found[family_name][:2] == (kind, {frozenset(labels)}), name
        assert (name if kind not in ("histogram", "summary") else f"{name}_count") in found[family_name][2], name
    text = generate_latest(metrics.registry).decode()
    assert "_created{" not in text and "_created " not in text  # no _created series


def test_the_scheduling_queue_depth_shows_a_running_simulation() -> None:
    metrics = Metrics()
    depth = {"controller": "provisioner"}
    with metrics.scheduling("provisioner", 3):
        assert metrics.registry.get_sample_value("karpenter_scheduler_queue_depth", depth) == 3
    assert metrics.registry.get_sample_value("karpenter_scheduler_queue_depth", depth) == 0
    assert metrics.registry.get_sample_value("karpenter_scheduler_scheduling_duration_seconds_count", depth) == 1


def test_each_failed_fleet_offering_counts_by_zone_zone_id_capacity_type_and_error_code() -> None:
    metrics = Metrics()
    metrics.launch_failure("us-west-2a", "usw2-az2", "spot", "InsufficientInstanceCapacity")
    metrics.launch_failure("us-west-2a", "usw2-az2", "spot", "InsufficientInstanceCapacity")
    failed = {"zone": "us-west-2a", "zone_id": "usw2-az2", "capacity_type": "spot",
              "reason": "InsufficientInstanceCapacity"}  # fmt: skip
    assert metrics.registry.get_sample_value("karpenter_cloudprovider_instance_launch_failures_total", failed) == 2


def test_fleet_batches_are_counted_by_size_and_window() -> None:
    metrics = Metrics()
    for size, window in ((1, 0.035), (20, 1.0), (3, 0.2)):
        metrics.fleet_batch(size, window)
    labels = {"batcher": "create_fleet"}
    assert metrics.registry.get_sample_value("karpenter_cloudprovider_batcher_batch_size_count", labels) == 3
    assert metrics.registry.get_sample_value("karpenter_cloudprovider_batcher_batch_size_sum", labels) == 24
    assert (
        metrics.registry.get_sample_value("karpenter_cloudprovider_batcher_batch_size_bucket", {**labels, "le": "2.0"})
        == 1
    )
    time = "karpenter_cloudprovider_batcher_batch_time_seconds"
    assert metrics.registry.get_sample_value(f"{time}_count", labels) == 3
    assert metrics.registry.get_sample_value(f"{time}_sum", labels) == pytest.approx(1.235)
    assert metrics.registry.get_sample_value(f"{time}_bucket", {**labels, "le": "0.035"}) == 1


def test_two_metrics_objects_count_apart() -> None:
    one, other = Metrics(), Metrics()
    one.nodes_drained.labels(nodepool="a").inc()
    assert other.registry.get_sample_value("karpenter_nodes_drained_total", {"nodepool": "a"}) is None


def test_every_cloud_call_is_timed_and_its_errors_counted_by_type() -> None:
    metrics = Metrics()
    cloud = MeteredCloudProvider(FakeCloudProvider(), metrics)
    cloud.instance_types(None)
    with pytest.raises(InstanceNotFoundError):
        cloud.delete("i-missing")
    value = metrics.registry.get_sample_value
    listed = {"controller": "worker", "method": "GetInstanceTypes", "provider": "aws"}
    assert value("karpenter_cloudprovider_duration_seconds_count", listed) == 1
    deleted = {"controller": "worker", "method": "Delete", "provider": "aws"}
    assert value("karpenter_cloudprovider_duration_seconds_count", deleted) == 1
    assert value("karpenter_cloudprovider_errors_total", {**deleted, "error": "InstanceNotFoundError"}) == 1
    assert value("karpenter_cloudprovider_errors_total", {**listed, "error": "InstanceNotFoundError"}) is None
    assert cloud.deleted == []  # other attributes pass through to the provider


class Starter:
    def start_node_claim(self, claim: dict[str, object], waiter: str = "") -> None:
        pass

    def delete_node_claims(self, names: list[str], reason: str) -> list[str]:
        return names


def test_a_replacement_counts_as_created_once_for_the_commands_reason(kube: MemKube) -> None:
    metrics = Metrics()
    execution = DisruptionExecution(kube, Events(), Starter(), metrics)
    planned = PlannedNodeClaim(
        node_pool="default", instance_types=["c5.large"], requirements=[], pods=["default/web"], price=0.085
    )
    inp = LaunchReplacementsInput(round=ProvisionRound(run_id="r", round=1), replacements=[planned], reason="Drifted")
    execution.launch_replacements(inp)
    execution.launch_replacements(inp)  # a retried activity finds its claim: not created again
    created = {"reason": "drifted", "nodepool": "default", "min_values_relaxed": "false"}
    assert metrics.registry.get_sample_value("karpenter_nodeclaims_created_total", created) == 1


def test_a_candidate_counts_as_disrupted_and_its_command_as_executed_once(kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"status": {"providerID": "aws:///us-west-2a/i-1"}})
        kube.patch(r.NODE, NODE, {"spec": {"providerID": "aws:///us-west-2a/i-1"}})
    metrics = Metrics()
    execution = DisruptionExecution(kube, Events(), Starter(), metrics)
    candidate = CandidateRef(node=NODE, node_claim=NAME, node_pool="default")
    command = Command(method="SingleNodeConsolidation", reason="Underutilized", action="Delete", candidates=[candidate])
    assert execution.start_disruption(StartInput(command=command)) == [NAME]
    execution.start_disruption(StartInput(command=command))  # retried
    disrupted = {"reason": "underutilized", "nodepool": "default", "capacity_type": "on-demand"}
    assert metrics.registry.get_sample_value("karpenter_nodeclaims_disrupted_total", disrupted) == 1
    executed = {"decision": "delete", "reason": "underutilized", "consolidation_type": "single"}
    assert metrics.registry.get_sample_value("karpenter_voluntary_disruption_decisions_total", executed) == 1
    by_pool = "karpenter_voluntary_disruption_decisions_by_nodepool_total"
    assert metrics.registry.get_sample_value(by_pool, {"nodepool": "default", **executed}) == 1


def test_a_rolled_back_command_counts_as_a_queue_failure(kube: MemKube) -> None:
    metrics = Metrics()
    execution = DisruptionExecution(kube, Events(), Starter(), metrics)
    candidate = CandidateRef(node=NODE, node_claim=NAME, node_pool="default")
    command = Command(
        method="SingleNodeConsolidation", reason="Underutilized", action="Replace", candidates=[candidate]
    )
    execution.abort_disruption(AbortInput(command=command, replacements=["default-rplcd"], reason="replacement failed"))
    failed = {"decision": "replace", "reason": "underutilized", "consolidation_type": "single"}
    assert metrics.registry.get_sample_value("karpenter_voluntary_disruption_queue_failures_total", failed) == 1
    executed = "karpenter_voluntary_disruption_decisions_total"
    assert metrics.registry.get_sample_value(executed, failed) is None  # start_disruption counts that


def test_an_expired_claim_counts_as_disrupted_and_a_finalized_one_as_terminated_once(kube: MemKube) -> None:
    metrics = Metrics()
    termination = TerminationActivities(kube, FakeCloudProvider(), Events(), "test", metrics=metrics)  # type: ignore[arg-type]
    termination.begin_termination(BeginTerminationInput(name=NAME, reason="expired", expired=True))
    termination.begin_termination(BeginTerminationInput(name=NAME, reason="expired", expired=True))
    value = metrics.registry.get_sample_value
    owner = {"nodepool": "default", "capacity_type": "on-demand"}
    assert value("karpenter_nodeclaims_disrupted_total", {"reason": "expired", **owner}) == 1
    termination.finalize(ClaimIdentity(name=NAME, node_name=NODE))
    termination.finalize(ClaimIdentity(name=NAME, node_name=NODE))  # retried: the claim is gone
    assert value("karpenter_nodeclaims_terminated_total", {**owner, "zone": ""}) == 1  # never launched: no zone
