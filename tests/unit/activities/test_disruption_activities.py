"""Disruption activities over the in-memory API and the fake cloud: an empty node is decided on, and
starting a command taints only the candidate's own Node and marks its NodeClaim."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from activities.disruption.decision import DecideInput, DisruptionActivities, confirms
from activities.disruption.execution import DisruptionExecution, LaunchReplacementsInput, SignalInput, StartInput
from activities.metrics.registry import Metrics
from activities.provisioning.models import ProvisionRound
from apis.meta import now_rfc3339
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.errors import ConflictError, ServerError
from kube.fake import Events, MemKube, count_lists, watch_cache_of
from kube.resources import Resource
from kube.watch_cache import WATCHED, WatchCache
from scheduling.disruption import CandidateRef, Command
from scheduling.types import PlannedNodeClaim
from tests.unit.activities.claimworld import NODE_CLASS, POOL, claim_body

PROVIDER_ID = "aws:///us-west-2a/i-1"


@pytest.fixture
def kube() -> MemKube:
    kube = MemKube()
    kube.create(r.NODEPOOL, POOL)
    kube.create(r.EC2NODECLASS, NODE_CLASS)
    claim = claim_body()
    claim["metadata"]["labels"] |= {
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "us-west-2a",
    }
    claim["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    claim["status"] |= {
        "providerID": PROVIDER_ID,
        "conditions": [
            {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            for t in ("Launched", "Registered", "Initialized")
        ],
    }
    kube.create(r.NODECLAIM, claim)
    node_labels = {**claim["metadata"]["labels"], "karpenter.sh/initialized": "true", "karpenter.sh/registered": "true"}
    node = {
        "metadata": {"name": "node-1", "labels": node_labels},
        "spec": {"providerID": PROVIDER_ID},
        "status": {
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    kube.create(r.NODE, node)
    return kube


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def acts(kube: MemKube, events: Events) -> DisruptionActivities:
    return DisruptionActivities(kube, FakeCloudProvider(), events)  # type: ignore[arg-type]


class Starter:
    def __init__(self) -> None:
        self.started: list[str] = []
        self.waiters: list[str] = []
        self.signals: list[tuple[str, str, str]] = []

    def start_node_claim(self, claim: dict[str, Any], waiter: str = "") -> None:
        self.started.append(claim["metadata"]["name"])
        self.waiters.append(waiter)

    def delete_node_claims(self, names: list[str], reason: str) -> list[str]:
        self.signals += [(name, "delete", reason) for name in names]
        return [name for name in names if name != "gone"]


@pytest.fixture
def execution(kube: MemKube, events: Events) -> DisruptionExecution:
    return DisruptionExecution(kube, events, Starter())


def command(node: str = "node-1") -> Command:
    candidate = CandidateRef(node=node, node_claim="default-abcde", node_pool="default")
    return Command(method="Emptiness", reason="Empty", action="Delete", candidates=[candidate], message="empty")


def taints(kube: MemKube) -> list[dict[str, Any]]:
    return kube.get(r.NODE, "node-1")["spec"].get("taints") or []


def test_an_empty_node_is_an_executable_emptiness_command(acts: DisruptionActivities) -> None:
    decided = acts.decide_disruption(DecideInput())
    assert decided.command is not None and decided.executable
    assert (decided.command.method, decided.command.action) == ("Emptiness", "Delete")
    assert decided.candidate_names() == ["default-abcde"]


def test_a_decision_is_timed_but_counts_as_executed_only_when_executed(kube: MemKube, events: Events) -> None:
    metrics = Metrics()
    acts = DisruptionActivities(kube, FakeCloudProvider(), events, metrics)  # type: ignore[arg-type]
    executed = "karpenter_voluntary_disruption_decisions_total"
    labels = {"decision": "delete", "reason": "empty", "consolidation_type": ""}
    evaluated = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count"
    ahead = acts.evaluate(DecideInput())
    assert ahead.executable and ahead.candidate_names() == ["default-abcde"]
    assert metrics.registry.get_sample_value(evaluated, {"method": "all", "consolidation_type": ""}) == 1
    decided = acts.decide_disruption(DecideInput())  # the controller's decision, and its validation
    assert acts.decide_disruption(DecideInput()).summary() == decided.summary() == ahead.summary()
    assert metrics.registry.get_sample_value(executed, labels) is None, "start_disruption counts it, once"


def test_a_validation_that_does_not_confirm_its_command_counts_as_a_failed_validation(
    kube: MemKube, events: Events
) -> None:
    metrics = Metrics()
    acts = DisruptionActivities(kube, FakeCloudProvider(), events, metrics)  # type: ignore[arg-type]
    failed = "karpenter_voluntary_disruption_failed_validations_total"
    decided = acts.decide_disruption(DecideInput(executable_methods=["Emptiness"]))
    assert decided.command is not None
    confirmed = acts.decide_disruption(DecideInput(executable_methods=["Emptiness"], validating=decided.command))
    assert confirms(decided.command, confirmed)
    assert metrics.registry.get_sample_value(failed, {"consolidation_type": ""}) is None
    other = decided.command.model_copy(update={"method": "SingleNodeConsolidation"})  # not what it decides now
    abandoned = acts.decide_disruption(DecideInput(executable_methods=["Emptiness"], validating=other))
    assert not confirms(other, abandoned)
    assert metrics.registry.get_sample_value(failed, {"consolidation_type": "single"}) == 1
    not_executable = acts.decide_disruption(DecideInput(executable_methods=[], validating=decided.command))
    assert not confirms(decided.command, not_executable)  # a method no longer executed is not confirmed
    assert metrics.registry.get_sample_value(failed, {"consolidation_type": ""}) == 1


def test_a_look_ahead_skips_a_settled_cluster_until_something_changes(kube: MemKube, events: Events) -> None:
    metrics = Metrics()
    acts = DisruptionActivities(kube, FakeCloudProvider(), events, metrics)  # type: ignore[arg-type]
    name = POOL["metadata"]["name"]
    kube.patch(r.NODEPOOL, name, {"spec": {"disruption": {"consolidateAfter": "Never"}}})  # no candidate
    settled = "nodeflow_disruption_settled_looks_total"
    first, settlement = acts.look_ahead(DecideInput(), None)
    assert first is not None and first.command is None and "ConsolidationDisabled" in first.rejections
    second, settlement = acts.look_ahead(DecideInput(), settlement)
    assert second is not None, "the first look wrote the pool's status counts: a change to decide over"
    third, settlement = acts.look_ahead(DecideInput(), settlement)
    assert third is None, "the same cluster, looked at again, is settled"
    assert metrics.registry.get_sample_value(settled) == 1
    kube.patch(r.NODEPOOL, name, {"spec": {"disruption": {"consolidateAfter": "0s"}}})
    changed, settlement = acts.look_ahead(DecideInput(), settlement)
    assert changed is not None and changed.command is not None and changed.command.method == "Emptiness"


def test_while_the_watches_saw_no_change_a_settled_look_reads_no_pod_or_node(kube: MemKube, events: Events) -> None:
    acts = DisruptionActivities(kube, FakeCloudProvider(), events)  # type: ignore[arg-type]
    kube.patch(r.NODEPOOL, POOL["metadata"]["name"], {"spec": {"disruption": {"consolidateAfter": "Never"}}})
    cache = watch_cache_of(kube)
    writing, listing = kube.patch, cache.list

    def watched_write(resource: Resource, *args: Any, **kwargs: Any) -> Any:
        written = writing(resource, *args, **kwargs)
        store = cache.store(resource)
        if store is not None:
            store.apply("MODIFIED", written)  # what the leader's watch of the kind does when it sees the write
        return written

    cached: list[str] = []

    def cached_list(resource: Resource) -> Any:
        cached.append(resource.plural)
        return listing(resource)

    kube.patch = watched_write  # type: ignore[method-assign]
    cache.list = cached_list  # type: ignore[method-assign]
    memory = None
    for _ in range(3):  # decide, decide over what the first wrote, settled
        _, memory = acts.look_ahead(DecideInput(), memory, cache)
    assert memory is not None and memory.settlement is not None
    read = count_lists(kube)
    cached.clear()
    quiet, memory = acts.look_ahead(DecideInput(), memory, cache)
    assert quiet is None
    watched = {"pods", "nodes", "nodeclaims", "nodepools", "ec2nodeclasses"}
    assert not watched & set(read + cached), (read, cached)
    assert "poddisruptionbudgets" in read, "what no watch sees is read every time"
    node_pool = cache.store(r.NODEPOOL)
    assert node_pool is not None
    node_pool.apply("ADDED", kube.get(r.NODEPOOL, POOL["metadata"]["name"]))  # a relist: the count moves
    again, memory = acts.look_ahead(DecideInput(), memory, cache)
    assert again is None and "pods" in cached, "read again, and still the same state: settled"
    assert not watched & set(read), "the full read is the cache's"
    kube.create(r.PDB, {"metadata": {"name": "web", "namespace": "default"}, "spec": {}})
    read.clear()
    decided, memory = acts.look_ahead(DecideInput(), memory, cache)  # a PDB is no watched kind
    assert decided is not None
    assert read.count("poddisruptionbudgets") == 1, f"the side lists are read once, then the cache: {read}"


def test_a_look_before_the_watches_listed_reads_everything_every_time(kube: MemKube, events: Events) -> None:
    """A new leader's watches may not all have listed: their count says nothing yet."""
    acts = DisruptionActivities(kube, FakeCloudProvider(), events)  # type: ignore[arg-type]
    kube.patch(r.NODEPOOL, POOL["metadata"]["name"], {"spec": {"disruption": {"consolidateAfter": "Never"}}})
    cache = watch_cache_of(kube, listed=(r.NODE, r.NODECLAIM, r.NODEPOOL, r.EC2NODECLASS))  # pods not yet
    memory = None
    for _ in range(3):
        _, memory = acts.look_ahead(DecideInput(), memory, cache)
    assert memory is not None and memory.settlement is not None and memory.mark is None
    read = count_lists(kube)
    quiet, _ = acts.look_ahead(DecideInput(), memory, cache)
    assert quiet is None and "pods" in read and "nodes" in read


def test_a_look_over_the_watch_cache_lists_no_watched_kind_decides_the_same_and_changes_nothing_cached(
    kube: MemKube, events: Events
) -> None:
    acts = DisruptionActivities(kube, FakeCloudProvider(), events)  # type: ignore[arg-type]
    kube.create(r.POD, {"metadata": {"name": "web", "namespace": "default"},
                        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "resources": {
                            "requests": {"cpu": "100m"}}}]}, "status": {"phase": "Running"}})  # fmt: skip
    listed = acts.evaluate(DecideInput())
    cache = watch_cache_of(kube)
    before = copy.deepcopy([cache.list(resource) for resource in WATCHED])
    read = count_lists(kube)
    looked, _ = acts.look_ahead(DecideInput(), None, cache)
    assert looked is not None and looked.summary() == listed.summary()
    assert not {"pods", "nodes", "nodeclaims", "nodepools", "ec2nodeclasses"} & set(read), read
    assert [cache.list(resource) for resource in WATCHED] == before, "cached objects are the watches': unchanged"
    unsynced = WatchCache(WATCHED)  # a new leader's watches have not listed yet: the API is read
    read.clear()
    acts.look_ahead(DecideInput(), None, unsynced)
    assert "pods" in read


def test_a_look_whose_status_write_failed_does_not_settle(kube: MemKube, events: Events) -> None:
    acts = DisruptionActivities(kube, FakeCloudProvider(), events)  # type: ignore[arg-type]
    kube.patch(r.NODEPOOL, POOL["metadata"]["name"], {"spec": {"disruption": {"consolidateAfter": "Never"}}})
    failing = kube.patch

    def refuse_status(resource: r.Resource, name: str, patch: Any, *args: Any, **kwargs: Any) -> Any:
        if resource is r.NODEPOOL and kwargs.get("subresource") == "status":
            raise ServerError("503: etcd leader changed")
        return failing(resource, name, patch, *args, **kwargs)

    kube.patch = refuse_status  # type: ignore[method-assign]
    decided, settlement = acts.look_ahead(DecideInput(), None)
    assert decided is not None and settlement.settlement is None, "the write is retried by the next decision"
    kube.patch = failing  # type: ignore[method-assign]
    for _ in range(2):
        decided, settlement = acts.look_ahead(DecideInput(), settlement)
    assert settlement.settlement is not None and acts.look_ahead(DecideInput(), settlement)[0] is None


def test_a_node_with_a_pod_is_not_empty(acts: DisruptionActivities, kube: MemKube) -> None:
    pod = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Running"},
    }
    kube.create(r.POD, pod)
    decided = acts.decide_disruption(DecideInput())
    assert decided.command is None or decided.command.method != "Emptiness"


def test_starting_a_command_taints_the_node_and_marks_the_claim(
    execution: DisruptionExecution, kube: MemKube, events: Events
) -> None:
    assert execution.start_disruption(StartInput(command=command())) == ["default-abcde"]
    assert taints(kube) == [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    conditions = kube.get(r.NODECLAIM, "default-abcde")["status"]["conditions"]
    assert any(c["type"] == "DisruptionReason" and c["reason"] == "Empty" for c in conditions)
    assert events.recorded[0][0] == "DisruptionTerminating"
    assert execution.start_disruption(StartInput(command=command())) == ["default-abcde"]  # idempotent
    assert len(taints(kube)) == 1


def test_a_command_of_many_candidates_marks_every_one_in_the_command_order(
    execution: DisruptionExecution, kube: MemKube, events: Events
) -> None:
    claim, node = kube.get(r.NODECLAIM, "default-abcde"), kube.get(r.NODE, "node-1")
    candidates = [CandidateRef(node="node-1", node_claim="default-abcde", node_pool="default")]
    with kube.as_admin():
        for i in range(2, 21):
            provider_id = f"aws:///us-west-2a/i-{i}"
            more = copy.deepcopy(claim)
            more["metadata"] = {"name": f"default-{i:05d}", "labels": claim["metadata"]["labels"]}
            more["status"]["providerID"] = provider_id
            kube.create(r.NODECLAIM, more)
            other = copy.deepcopy(node)
            other["metadata"] = {"name": f"node-{i}", "labels": node["metadata"]["labels"]}
            other["spec"]["providerID"] = provider_id
            kube.create(r.NODE, other)
            candidates.append(CandidateRef(node=f"node-{i}", node_claim=f"default-{i:05d}", node_pool="default"))
    many = command().model_copy(update={"candidates": candidates})
    assert execution.start_disruption(StartInput(command=many)) == [c.node_claim for c in candidates]
    for candidate in candidates:
        assert kube.get(r.NODE, candidate.node)["spec"]["taints"] == [
            {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
        ]
    assert len(events.recorded) == len(candidates)


def test_signalling_a_command_asks_every_candidate_workflow_to_delete_and_names_those_running(
    execution: DisruptionExecution,
) -> None:
    assert execution.signal_disruption(SignalInput(names=["a", "gone", "b"], reason="disrupted: Empty")) == ["a", "b"]
    assert execution.starter.signals == [(n, "delete", "disrupted: Empty") for n in ("a", "gone", "b")]  # type: ignore[attr-defined]


def test_a_same_named_node_of_another_instance_is_not_tainted(execution: DisruptionExecution, kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODE, "node-1", {"spec": {"providerID": "aws:///us-west-2a/i-other"}})
    before = copy.deepcopy(kube.get(r.NODE, "node-1"))
    assert execution.start_disruption(StartInput(command=command())) == []
    assert kube.get(r.NODE, "node-1") == before


def test_an_aborted_command_is_untainted_and_its_replacements_deleted(
    execution: DisruptionExecution, kube: MemKube, events: Events
) -> None:
    from activities.disruption.execution import AbortInput

    execution.start_disruption(StartInput(command=command()))
    kube.create(r.NODECLAIM, {"metadata": {"name": "default-repl1"}, "spec": {}})
    assert execution.replacements_state(["default-repl1", "gone"]).model_dump() == {
        "initialized": [],
        "gone": ["gone"],
        "waiting": ["default-repl1"],
    }
    execution.abort_disruption(AbortInput(command=command(), replacements=["default-repl1"], reason="failed"))
    assert taints(kube) == []
    conditions = kube.get(r.NODECLAIM, "default-abcde")["status"]["conditions"]
    assert any(c["type"] == "DisruptionReason" and c["status"] == "False" for c in conditions)
    assert ("nodeclaims", "", "default-repl1") not in kube.objects
    assert events.recorded[-1][0] == "DisruptionBlocked"


# -- what a decision publishes: the Consolidatable condition and Unconsolidatable events -----------------


class KindEvents:
    """Records (kind, name, type, reason) of every event."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str]] = []

    def record(self, involved: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        self.recorded.append((involved.get("kind", ""), involved["metadata"]["name"], event_type, reason))


def consolidatable(kube: MemKube) -> list[dict[str, Any]]:
    conditions = kube.get(r.NODECLAIM, "default-abcde")["status"]["conditions"]
    return [c for c in conditions if c["type"] == "Consolidatable"]


def test_a_decision_marks_the_claim_consolidatable_once(acts: DisruptionActivities, kube: MemKube) -> None:
    acts.decide_disruption(DecideInput())
    [condition] = consolidatable(kube)
    assert (condition["status"], condition["reason"]) == ("True", "Consolidatable")
    version = kube.get(r.NODECLAIM, "default-abcde")["metadata"]["resourceVersion"]
    acts.decide_disruption(DecideInput())  # nothing changed: no write
    assert kube.get(r.NODECLAIM, "default-abcde")["metadata"]["resourceVersion"] == version


def test_a_recent_pod_event_makes_the_claim_wait_and_says_until_when(acts: DisruptionActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODEPOOL, "default", {"spec": {"disruption": {"consolidateAfter": "1h"}}})
        kube.patch(r.NODECLAIM, "default-abcde", {"status": {"lastPodEventTime": now_rfc3339()}}, subresource="status")
    acts.decide_disruption(DecideInput())
    [condition] = consolidatable(kube)
    assert (condition["status"], condition["reason"]) == ("False", "ConsolidateAfter")
    assert "consolidatable from" in condition["message"]
    with kube.as_admin():
        kube.patch(r.NODEPOOL, "default", {"spec": {"disruption": {"consolidateAfter": "Never"}}})
    acts.decide_disruption(DecideInput())
    assert consolidatable(kube) == []


def test_unconsolidatable_is_recorded_on_the_node_and_the_claim_once(kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODEPOOL, "default", {"spec": {"disruption": {"consolidateAfter": "Never"}}})
    events = KindEvents()
    acts = DisruptionActivities(kube, FakeCloudProvider(), events)  # type: ignore[arg-type]
    acts.decide_disruption(DecideInput())
    acts.decide_disruption(DecideInput())  # the same finding 10 s later: not recorded again
    assert events.recorded == [
        ("Node", "node-1", "Normal", "Unconsolidatable"),
        ("NodeClaim", "default-abcde", "Normal", "Unconsolidatable"),
    ]


def test_a_failing_condition_write_does_not_fail_the_decision(acts: DisruptionActivities, kube: MemKube) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ConflictError("always")

    kube.patch = refuse  # type: ignore[method-assign]
    decided = acts.decide_disruption(DecideInput())
    assert decided.command is not None


def test_launching_replacements_creates_their_claims_and_starts_their_workflows_once(
    execution: DisruptionExecution, kube: MemKube
) -> None:
    planned = PlannedNodeClaim(
        node_pool="default", instance_types=["c5.large"], requirements=[], pods=["default/web-1"], price=0.085
    )
    elsewhere = planned.model_copy(update={"node_pool": "gone"})  # its NodePool was deleted: skipped
    inp = LaunchReplacementsInput(
        round=ProvisionRound(run_id="run-1", round=3), replacements=[planned, elsewhere], waiter="disruption"
    )

    (name,) = execution.launch_replacements(inp)
    claim = kube.get(r.NODECLAIM, name)
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
    assert execution.launch_replacements(inp) == [name]  # a retried activity finds the same claim
    assert len([c for c in kube.list(r.NODECLAIM) if c["metadata"]["name"] == name]) == 1
    assert execution.starter.started == [name, name]  # type: ignore[attr-defined]  # a retry starts again: the starter finds it running
    assert execution.starter.waiters == ["disruption", "disruption"]  # type: ignore[attr-defined]  # told when it is up


def test_a_claim_planned_with_a_relaxed_min_values_says_so_as_karpenter_does(
    execution: DisruptionExecution, kube: MemKube
) -> None:
    planned = PlannedNodeClaim(
        node_pool="default", instance_types=["r5.large"], requirements=[], pods=["default/web-1"], price=0.126
    )
    relaxed = planned.model_copy(update={"pods": ["default/web-2"], "min_values_relaxed": True})
    inp = LaunchReplacementsInput(round=ProvisionRound(run_id="run-1", round=4), replacements=[planned, relaxed])
    names = execution.launch_replacements(inp)
    annotation = "karpenter.sh/nodeclaim-min-values-relaxed"
    assert [kube.get(r.NODECLAIM, n)["metadata"]["annotations"][annotation] for n in names] == ["false", "true"]
    created = "karpenter_nodeclaims_created_total"
    for value in ("false", "true"):
        labels = {"reason": "disrupted", "nodepool": "default", "min_values_relaxed": value}
        assert execution.metrics.registry.get_sample_value(created, labels) == 1


def test_a_decision_counts_each_pools_nodes_on_its_status_once(acts: DisruptionActivities, kube: MemKube) -> None:
    """NodePool `status.resources` and `status.nodes` (the NODES column) come from the decision's snapshot,
    every round, rather than from a list per NodeClaim step (quadratic in the nodes)."""
    acts.decide_disruption(DecideInput())
    status = kube.get(r.NODEPOOL, POOL["metadata"]["name"])["status"]
    assert status["nodes"] == 1
    assert status["resources"] == {"cpu": "2", "ephemeral-storage": "0", "memory": "8Gi", "nodes": "1", "pods": "110"}
    version = kube.get(r.NODEPOOL, POOL["metadata"]["name"])["metadata"]["resourceVersion"]
    acts.decide_disruption(DecideInput())  # nothing changed: no write
    assert kube.get(r.NODEPOOL, POOL["metadata"]["name"])["metadata"]["resourceVersion"] == version


def guarded_patch(kube: MemKube, resource: Resource, name: str, patch: dict[str, Any]) -> None:
    version = kube.get(resource, name)["metadata"]["resourceVersion"]
    kube.patch(resource, name, {**patch, "metadata": {**patch.get("metadata", {}), "resourceVersion": version}})


def mark_disrupted(kube: MemKube, since: str) -> None:
    """The Node tainted karpenter.sh/disrupted and its NodeClaim's DisruptionReason True since `since`."""
    taint = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
    guarded_patch(kube, r.NODE, "node-1", {"spec": {"taints": [taint]}})
    claim = kube.get(r.NODECLAIM, "default-abcde")
    reason = {"type": "DisruptionReason", "status": "True", "reason": "Underutilized", "message": "",
              "lastTransitionTime": since}  # fmt: skip
    conditions = [c for c in claim["status"]["conditions"] if c["type"] != "DisruptionReason"] + [reason]
    guarded_patch(kube, r.NODECLAIM, "default-abcde", {"status": {"conditions": conditions}})


def reasons(kube: MemKube) -> list[str]:
    return [c["type"] for c in kube.get(r.NODECLAIM, "default-abcde")["status"]["conditions"]]


def test_the_controllers_decision_clears_a_disruption_mark_nothing_acts_on(
    acts: DisruptionActivities, kube: MemKube
) -> None:
    mark_disrupted(kube, "2026-01-01T00:00:00Z")  # long ago, and the claim is not being deleted
    assert acts.look_ahead(DecideInput(), None)[0] is not None
    assert taints(kube), "the leader's look ahead runs while commands are under way: it clears nothing"
    first = acts.decide_disruption(DecideInput())
    assert first.command is None, "a node marked at the snapshot is being disrupted for this decision"
    assert taints(kube) == [] and "DisruptionReason" not in reasons(kube)
    again = acts.decide_disruption(DecideInput())
    assert again.command is not None and again.command.method == "Emptiness", "a candidate again"


def test_a_fresh_mark_or_a_deleting_claim_keeps_its_taint(acts: DisruptionActivities, kube: MemKube) -> None:
    mark_disrupted(kube, now_rfc3339())  # just handed to the NodeClaim's workflow by the last command
    acts.decide_disruption(DecideInput())
    assert taints(kube) and "DisruptionReason" in reasons(kube)
    guarded_patch(kube, r.NODECLAIM, "default-abcde", {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})
    mark_disrupted(kube, "2026-01-01T00:00:00Z")
    acts.decide_disruption(DecideInput())
    assert taints(kube), "its termination drains it"
