"""activities.metrics: Karpenter's metric names, types and labels in the exposition Prometheus scrapes, and
each count made where the work happens (activities over MemKube and the fake cloud): a NodeClaim created
or terminated counts once however often its activity is retried, a disruption once per candidate, every
cloud-provider call is timed and its errors counted by type."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from activities.disruption_execution import DisruptionExecution, LaunchReplacementsInput, StartInput
from activities.metrics import MeteredCloudProvider, Metrics
from activities.models import ClaimIdentity
from activities.provisioning_models import ProvisionRound
from activities.termination import BeginTerminationInput, TerminationActivities
from cloudprovider.errors import InstanceNotFoundError
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from scheduling.disruption import CandidateRef, Command
from scheduling.types import PlannedNodeClaim
from tests.unit.activities.claimworld import NAME, NODE
from tests.unit.activities.memkube import Events, MemKube

# Karpenter's name (as scraped), type and labels of every metric nodeflow exports.
EXPORTED = {
    "karpenter_nodeclaims_created_total": ("counter", {"reason", "nodepool"}),
    "karpenter_nodeclaims_terminated_total": ("counter", {"nodepool"}),
    "karpenter_nodeclaims_disrupted_total": ("counter", {"reason", "nodepool"}),
    "karpenter_nodes_allocatable": ("gauge", {"node_name", "nodepool", "resource_type"}),
    "karpenter_nodepools_usage": ("gauge", {"nodepool", "resource_type"}),
    "karpenter_nodepools_limit": ("gauge", {"nodepool", "resource_type"}),
    "karpenter_provisioner_scheduling_duration_seconds": ("histogram", {"controller"}),
    "karpenter_provisioner_scheduling_queue_depth": ("gauge", {"controller"}),
    "karpenter_cloudprovider_duration_seconds": ("histogram", {"controller", "method", "provider"}),
    "karpenter_cloudprovider_errors_total": ("counter", {"controller", "method", "provider", "error"}),
    "karpenter_cloudprovider_batcher_batch_size": ("histogram", {"batcher"}),
    "karpenter_interruption_received_messages_total": ("counter", {"message_type"}),
    "karpenter_interruption_deleted_messages_total": ("counter", set()),
}


def test_the_exposition_has_karpenters_names_types_and_labels() -> None:
    metrics = Metrics()
    metrics.nodeclaims_created.labels(reason="provisioned", nodepool="default").inc()
    metrics.nodeclaims_terminated.labels(nodepool="default").inc()
    metrics.nodeclaims_disrupted.labels(reason="underutilized", nodepool="default").inc()
    metrics.nodes_allocatable.labels("node-1", "default", "cpu").set(1.93)
    metrics.nodepools_usage.labels("default", "cpu").set(2)
    metrics.nodepools_limit.labels("default", "cpu").set(1000)
    with metrics.scheduling("provisioner", 3):
        assert (
            metrics.registry.get_sample_value(
                "karpenter_provisioner_scheduling_queue_depth", {"controller": "provisioner"}
            )
            == 3
        )
    cloud = MeteredCloudProvider(FakeCloudProvider(), metrics)
    with pytest.raises(InstanceNotFoundError):
        cloud.get("i-missing")
    metrics.interruption_received.labels(message_type="spot_interrupted").inc()
    metrics.interruption_deleted.inc()
    metrics.fleet_batch(20)

    text = generate_latest(metrics.registry).decode()
    found, samples = {}, set()
    for family in text_string_to_metric_families(text):
        found[family.name] = (family.type, {frozenset(s.labels) - {"le"} for s in family.samples})
        samples |= {s.name for s in family.samples}
    for name, (kind, labels) in EXPORTED.items():
        family_name = name.removesuffix("_total") if kind == "counter" else name
        assert found[family_name] == (kind, {frozenset(labels)}), name
        assert (name if kind != "histogram" else f"{name}_count") in samples, name
    assert "_created" not in text.replace("karpenter_nodeclaims_created_total", "")  # no _created series
    assert (
        metrics.registry.get_sample_value("karpenter_provisioner_scheduling_queue_depth", {"controller": "provisioner"})
        == 0
    )


def test_fleet_batches_are_counted_by_size() -> None:
    metrics = Metrics()
    for size in (1, 20, 3):
        metrics.fleet_batch(size)
    labels = {"batcher": "create_fleet"}
    assert metrics.registry.get_sample_value("karpenter_cloudprovider_batcher_batch_size_count", labels) == 3
    assert metrics.registry.get_sample_value("karpenter_cloudprovider_batcher_batch_size_sum", labels) == 24
    assert (
        metrics.registry.get_sample_value("karpenter_cloudprovider_batcher_batch_size_bucket", {**labels, "le": "2.0"})
        == 1
    )


def test_two_metrics_objects_count_apart() -> None:
    one, other = Metrics(), Metrics()
    one.nodeclaims_terminated.labels(nodepool="a").inc()
    assert other.registry.get_sample_value("karpenter_nodeclaims_terminated_total", {"nodepool": "a"}) is None


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
    def start_node_claim(self, claim: dict[str, object]) -> None:
        pass

    def signal_node_claims(self, names: list[str], signal: str, reason: str) -> list[str]:
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
    created = {"reason": "drifted", "nodepool": "default"}
    assert metrics.registry.get_sample_value("karpenter_nodeclaims_created_total", created) == 1


def test_a_candidate_counts_as_disrupted_once_for_the_commands_reason(kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"status": {"providerID": "aws:///us-west-2a/i-1"}})
        kube.patch(r.NODE, NODE, {"spec": {"providerID": "aws:///us-west-2a/i-1"}})
    metrics = Metrics()
    execution = DisruptionExecution(kube, Events(), Starter(), metrics)
    candidate = CandidateRef(node=NODE, node_claim=NAME, node_pool="default")
    command = Command(method="SingleNodeConsolidation", reason="Underutilized", action="Delete", candidates=[candidate])
    assert execution.start_disruption(StartInput(command=command)) == [NAME]
    execution.start_disruption(StartInput(command=command))  # retried
    disrupted = {"reason": "underutilized", "nodepool": "default"}
    assert metrics.registry.get_sample_value("karpenter_nodeclaims_disrupted_total", disrupted) == 1


def test_an_expired_claim_counts_as_disrupted_and_a_finalized_one_as_terminated_once(kube: MemKube) -> None:
    metrics = Metrics()
    termination = TerminationActivities(kube, FakeCloudProvider(), Events(), "test", metrics=metrics)  # type: ignore[arg-type]
    termination.begin_termination(BeginTerminationInput(name=NAME, reason="expired", expired=True))
    termination.begin_termination(BeginTerminationInput(name=NAME, reason="expired", expired=True))
    value = metrics.registry.get_sample_value
    assert value("karpenter_nodeclaims_disrupted_total", {"reason": "expired", "nodepool": "default"}) == 1
    termination.finalize(ClaimIdentity(name=NAME, node_name=NODE))
    termination.finalize(ClaimIdentity(name=NAME, node_name=NODE))  # retried: the claim is gone
    assert value("karpenter_nodeclaims_terminated_total", {"nodepool": "default"}) == 1
