"""The garbage collector: the workflow on the time-skipping server with a stand-in activity, its stored
histories replayed, and the real activity over the in-memory cloud and a stand-in Kubernetes list."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.client import WorkflowHandle, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from activities.garbage_collection.collector import (
    CollectInput,
    CollectResult,
    GarbageCollectionActivities,
    LeakedInstance,
    LostClaim,
)
from activities.garbage_collection.predicates import lost_node
from cloudprovider.fake import FakeCloudProvider
from cloudprovider.types import TAG_CLUSTER_PREFIX, TAG_NODECLAIM
from kube.errors import ServerError
from kube.resources import EC2NODECLASS, NODECLAIM, Resource
from tests.workflows import histories
from tests.workflows.workers import worker_on_fresh_queue
from workers.temporal.workflow_runner import CompactWorkflowRunner
from workflows import garbage_collection as gc
from workflows.garbage_collection import (
    GarbageCollectorSettings,
    GarbageCollectorState,
    GarbageCollectorWorkflow,
    request_collection,
    start_garbage_collector,
)
from workflows.messages import NodeClaimSignal

OWNER = "nodeflow-dev"  # the cluster every start records (workers.temporal.namespace_owner)
HISTORIES = Path(__file__).parent / "histories" / "garbage_collection"


async def save_history(handle: WorkflowHandle[Any, Any], name: str) -> None:
    await histories.save_history(handle, name, HISTORIES)


@dataclass
class Script:
    """What the stand-in `collect_leaked_instances` answers, round by round, and what it was asked."""

    results: list[CollectResult | str] = field(default_factory=list)  # a str: that round fails with it
    inputs: list[CollectInput] = field(default_factory=list)

    @activity.defn(name="collect_leaked_instances")
    def collect(self, inp: CollectInput) -> CollectResult:
        self.inputs.append(inp)
        answer = self.results.pop(0) if self.results else CollectResult()
        if isinstance(answer, str):
            raise ApplicationError(answer, non_retryable=True)
        return answer


def leaked(instance_id: str, claim: str) -> LeakedInstance:
    return LeakedInstance(instance_id=instance_id, node_claim=claim, launch_time="2026-01-01T00:00:00+00:00")


@workflow.defn(name="LostClaimStandIn", sandboxed=False)
class LostClaimStandIn:
    """Stands in for a NodeClaim workflow: records the `delete` signals it gets."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    @workflow.signal(name=NodeClaimSignal.DELETE)
    def delete(self, reason: str = "") -> None:
        self.reasons.append(reason)

    @workflow.query(name="reasons")
    def got(self) -> list[str]:
        return self.reasons

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
async def task_queue(time_env: WorkflowEnvironment, script: Script) -> AsyncIterator[str]:
    workflows = [GarbageCollectorWorkflow, LostClaimStandIn]
    async with worker_on_fresh_queue(time_env.client, workflows, [script.collect], "gc") as queue:
        yield queue


async def status(handle: WorkflowHandle[Any, Any]) -> GarbageCollectorState:
    result: GarbageCollectorState = await handle.query(GarbageCollectorWorkflow.status)
    return result


async def test_a_round_at_start_then_one_per_collect_signal_and_one_an_hour_otherwise(
    time_env: WorkflowEnvironment, task_queue: str, script: Script
) -> None:
    script.results = [CollectResult(checked=2), CollectResult(checked=2, terminated=[leaked("i-1", "gone")])]
    await start_garbage_collector(time_env.client, task_queue, OWNER)
    handle = time_env.client.get_workflow_handle(gc.WORKFLOW_ID)
    await time_env.sleep(gc.BACKSTOP - timedelta(minutes=1))  # not every interval: nothing asked for a round
    assert (await status(handle)).rounds == 1

    await request_collection(time_env.client, task_queue, GarbageCollectorSettings(), OWNER)  # the leader found garbage
    await time_env.sleep(timedelta(seconds=1))

    state = await status(handle)
    assert state.rounds == 2
    assert state.terminated_total == 1
    assert [i.instance_id for i in state.recent] == ["i-1"]
    assert [i.min_age_seconds for i in script.inputs] == [120, 120]
    memo = await (await handle.describe()).memo()
    assert memo["summary"] == "2 rounds, 1 leaked instances terminated; last i-1 (NodeClaim gone)"
    await time_env.sleep(gc.BACKSTOP + timedelta(minutes=1))  # the backstop, for a leader that never looks
    assert (await status(handle)).rounds == 3
    await save_history(handle, "garbage-collector-rounds")
    await handle.terminate()


async def test_a_collection_request_starts_a_collector_that_is_not_running(
    time_env: WorkflowEnvironment, task_queue: str, script: Script
) -> None:
    settings = GarbageCollectorSettings(min_age_seconds=30)
    await request_collection(time_env.client, task_queue, settings, OWNER)
    handle = time_env.client.get_workflow_handle(gc.WORKFLOW_ID)
    await time_env.sleep(timedelta(seconds=1))
    assert (await status(handle)).rounds == 1
    assert [i.min_age_seconds for i in script.inputs] == [30]
    memo = await (await handle.describe()).memo()
    assert memo[gc.OWNER_MEMO] == OWNER, "the namespace's owner is recorded, as at a worker's start"
    await handle.terminate()


async def test_starting_again_keeps_the_running_collector_and_adopts_new_settings(
    time_env: WorkflowEnvironment, task_queue: str, script: Script
) -> None:
    await start_garbage_collector(time_env.client, task_queue, OWNER)
    handle = time_env.client.get_workflow_handle(gc.WORKFLOW_ID)
    first = (await handle.describe()).run_id
    await time_env.sleep(timedelta(seconds=1))
    assert (await status(handle)).rounds == 1

    await start_garbage_collector(time_env.client, task_queue, OWNER)  # the same settings: nothing happens
    await time_env.sleep(timedelta(seconds=1))
    assert (await status(handle)).rounds == 1

    # another worker, with other settings: the running collector adopts them and runs a round at once
    await start_garbage_collector(
        time_env.client, task_queue, OWNER, GarbageCollectorSettings(interval_seconds=600, min_age_seconds=30)
    )
    await time_env.sleep(timedelta(seconds=1))
    state = await status(handle)
    assert (await handle.describe()).run_id == first
    assert (state.rounds, state.interval_seconds, state.min_age_seconds) == (2, 600, 30)
    assert [i.min_age_seconds for i in script.inputs] == [120, 30]
    await save_history(handle, "garbage-collector-reconfigured")
    await handle.terminate()


async def test_a_failed_round_is_recorded_and_the_next_one_runs(
    time_env: WorkflowEnvironment, task_queue: str, script: Script
) -> None:
    script.results = ["the API server is down", CollectResult(checked=1)]
    await start_garbage_collector(time_env.client, task_queue, OWNER)
    handle = time_env.client.get_workflow_handle(gc.WORKFLOW_ID)

    await time_env.sleep(timedelta(minutes=1))
    failed = await status(handle)
    assert (failed.rounds, failed.last_error) == (1, "the API server is down")
    assert "last round failed: the API server is down" in failed.summary()

    await handle.signal(GarbageCollectorWorkflow.collect)  # the leader's next look still finds the garbage
    await time_env.sleep(timedelta(seconds=1))
    recovered = await status(handle)
    assert (recovered.rounds, recovered.last_error) == (2, "")
    await save_history(handle, "garbage-collector-failed-round")
    await handle.terminate()


async def test_claims_whose_node_or_claim_vanished_are_signalled_delete(
    time_env: WorkflowEnvironment, task_queue: str, script: Script
) -> None:
    lost = time_env.client.get_workflow_handle("nodeclaim-lost")
    await time_env.client.start_workflow(LostClaimStandIn.run, id="nodeclaim-lost", task_queue=task_queue)
    script.results = [
        CollectResult(
            lost_claims=[
                LostClaim(node_claim="lost", reason="Node ip-1 no longer exists"),
                LostClaim(node_claim="no-workflow", reason="the NodeClaim no-workflow no longer exists"),
            ]
        )
    ]
    await start_garbage_collector(time_env.client, task_queue, OWNER)
    handle = time_env.client.get_workflow_handle(gc.WORKFLOW_ID)
    await time_env.sleep(timedelta(seconds=1))

    assert (await status(handle)).rounds == 1  # a claim without a workflow does not fail the round
    assert await lost.query("reasons") == ["Node ip-1 no longer exists"]
    await handle.terminate()
    await lost.terminate()


async def test_continue_as_new_carries_the_state_and_keeps_history_bounded(
    time_env: WorkflowEnvironment, task_queue: str, script: Script
) -> None:
    script.results = [CollectResult(terminated=[leaked(f"i-{n}", f"c-{n}")]) for n in range(25)]
    await start_garbage_collector(time_env.client, task_queue, OWNER)
    handle = time_env.client.get_workflow_handle(gc.WORKFLOW_ID)
    first_run = (await handle.describe()).run_id
    for _ in range(gc.ROUNDS_PER_RUN + 5):
        await request_collection(time_env.client, task_queue, GarbageCollectorSettings(), OWNER)
        await time_env.sleep(timedelta(seconds=1))

    state = await status(handle)
    assert (await handle.describe()).run_id != first_run
    assert state.rounds > gc.ROUNDS_PER_RUN
    assert state.terminated_total == 25
    assert [i.instance_id for i in state.recent] == [f"i-{n}" for n in range(5, 25)]  # the newest RECENT_LIMIT
    memo = await (await handle.describe()).memo()
    assert memo[gc.OWNER_MEMO] == OWNER, "the owner survives continue-as-new: a collector without one is refused"
    first_history = await time_env.client.get_workflow_handle(gc.WORKFLOW_ID, run_id=first_run).fetch_history()
    assert len(first_history.events) < 2000
    await handle.terminate()


# -- replay ----------------------------------------------------------------------------------------------


def replayer() -> Replayer:
    return Replayer(
        workflows=[GarbageCollectorWorkflow],
        data_converter=pydantic_data_converter,
        unsandboxed_workflow_runner=CompactWorkflowRunner(),
    )


STORED = sorted(HISTORIES.glob("*.json"))


@pytest.mark.parametrize("path", STORED, ids=[p.stem for p in STORED])
async def test_stored_history_replays(path: Path) -> None:
    await replayer().replay_workflow(WorkflowHistory.from_json(path.stem, path.read_text()))


async def test_a_history_whose_commands_differ_fails_replay() -> None:
    raw = json.loads((HISTORIES / "garbage-collector-rounds.json").read_text())
    for event in raw["events"]:
        attrs = event.get("activityTaskScheduledEventAttributes")
        if attrs:
            attrs["activityType"]["name"] = "collect_v0"
            break
    with pytest.raises(NondeterminismError):
        await replayer().replay_workflow(WorkflowHistory.from_json("bad", json.dumps(raw)))


def test_there_are_stored_histories() -> None:
    assert len(STORED) >= 2


# -- the activity ----------------------------------------------------------------------------------------


class ClaimList:
    """The Kubernetes calls the activity makes: list NodeClaims (or fail), and EC2NodeClasses (none)."""

    def __init__(self, *names: str, fail: bool = False) -> None:
        self.names = names
        self.fail = fail

    def list(self, resource: Resource, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        if resource == EC2NODECLASS:
            return []
        assert resource == NODECLAIM
        if self.fail:
            raise ServerError("503 ServiceUnavailable")
        return [{"metadata": {"name": n}} for n in self.names]


def put(cloud: FakeCloudProvider, instance_id: str, claim: str | None, age: timedelta | None) -> None:
    tags = {f"{TAG_CLUSTER_PREFIX}{cloud.cluster_name}": "owned"}
    if claim is not None:
        tags[TAG_NODECLAIM] = claim
    launched = (datetime.now(UTC) - age).isoformat() if age is not None else ""
    cloud.put_running(instance_id, tags, launch_time=launched)


def test_the_activity_terminates_only_old_instances_of_missing_claims() -> None:
    cloud = FakeCloudProvider()
    put(cloud, "i-kept", "alive", timedelta(hours=1))
    put(cloud, "i-leaked", "gone", timedelta(minutes=3))
    put(cloud, "i-young", "creating", timedelta(seconds=30))
    put(cloud, "i-untagged", None, timedelta(hours=1))
    put(cloud, "i-undated", "gone-too", None)
    activities = GarbageCollectionActivities(ClaimList("alive"), cloud)  # type: ignore[arg-type]

    result = activities.collect(CollectInput(min_age_seconds=120))

    assert cloud.deleted == ["i-leaked"]
    assert (result.checked, result.too_young) == (5, 2)
    assert [(i.instance_id, i.node_claim) for i in result.terminated] == [("i-leaked", "gone")]
    assert result.lost_claims == [LostClaim(node_claim="gone", reason="the NodeClaim gone no longer exists")]
    again = activities.collect(CollectInput(min_age_seconds=120))  # a terminating instance is not live
    assert cloud.deleted == ["i-leaked"]
    assert (again.checked, again.terminated) == (4, [])


def test_the_activity_raises_when_claims_cannot_be_listed() -> None:
    cloud = FakeCloudProvider()
    put(cloud, "i-1", "unknown", timedelta(hours=1))
    with pytest.raises(ServerError):
        GarbageCollectionActivities(ClaimList(fail=True), cloud).collect(CollectInput())  # type: ignore[arg-type]
    assert cloud.deleted == []


def registered(name: str, node: str, launched: datetime, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {})}
    conditions = [
        {"type": "Launched", "status": "True", "lastTransitionTime": launched.isoformat()},
        {"type": "Registered", "status": "True"},
    ]
    return {"metadata": meta, "status": {"providerID": f"aws:///z/{name}", "nodeName": node, "conditions": conditions}}


def test_a_registered_claim_whose_node_vanished_is_lost_once_old_enough() -> None:
    now = datetime.now(UTC)
    old, young = now - timedelta(minutes=10), now - timedelta(seconds=10)
    nodes = {"kept": {"metadata": {"name": "kept"}}}
    age = timedelta(minutes=2)

    assert lost_node(registered("a", "vanished", old), nodes, now, age) == "vanished"
    assert lost_node(registered("b", "kept", old), nodes, now, age) == ""
    assert lost_node(registered("c", "vanished", young), nodes, now, age) == ""  # the list may lag
    assert lost_node(registered("d", "vanished", old, deleting=True), nodes, now, age) == ""  # watcher's job
