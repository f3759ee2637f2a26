"""Operating a running NodeClaim: drift marking, expire, replace (forwarded to the disruption controller),
and drains that wait on PDBs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tests.eventually import eventually_async
from tests.workflows.claim_status import claim_status_when_asleep, wait_until_asleep
from tests.workflows.fakes import World
from tests.workflows.histories import save_history
from tests.workflows.workers import worker_on_fresh_queue
from workflows import timing
from workflows.disruption import WORKFLOW_ID as DISRUPTION_ID
from workflows.messages import DisruptionSignal
from workflows.nodeclaim import RUNNING_CHECKS_PER_RUN, NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import DELETED, INITIALIZING, RUNNING, NodeClaimInput, NodeClaimState


async def start(env: WorkflowEnvironment, task_queue: str, **kwargs: object) -> WorkflowHandle:
    inp = NodeClaimInput(name="default-abcde", node_pool="default", **kwargs)  # type: ignore[arg-type]
    return await env.client.start_workflow(NodeClaimWorkflow.run, inp, id=workflow_id(inp.name), task_queue=task_queue)


async def wait_until(
    handle: WorkflowHandle, env: WorkflowEnvironment, check: Callable[[NodeClaimState], bool], what: str
) -> NodeClaimState:
    """Query `status` until `check` holds, skipping 20 s of workflow time between polls."""

    async def status() -> NodeClaimState | None:
        state = await claim_status_when_asleep(env, handle)
        if state is None:
            return None
        assert check(state), state
        return state

    return await eventually_async(status, timeout=120, what=what, pause=lambda: env.sleep(timedelta(seconds=20)))


async def check_drift(env: WorkflowEnvironment, handle: WorkflowHandle, times: int, world: World) -> None:
    """Signal `check_drift` `times` times, each once the claim is asleep again after the previous check."""
    for _ in range(times):
        before = world.drift_checks
        await wait_until_asleep(env, handle.id)
        await handle.signal(NodeClaimWorkflow.check_drift, "claim sweep: AMIDrift")

        async def checked(before: int = before) -> bool:
            return world.drift_checks > before

        await eventually_async(checked, timeout=30, what="the running check")


async def test_should_mark_the_claim_drifted_by_check_drift_signals(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.drift_after_checks = 3
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await check_drift(time_env, handle, 3, world)
    drifted = await wait_until(handle, time_env, lambda s: bool(s.drift_reason), "Drifted")
    assert drifted.phase == RUNNING  # drift only marks: the disruption controller replaces
    assert drifted.conditions["Drifted"] == "True (AMIDrift)"
    assert drifted.drift_checks == 3

    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-running-drift")
    assert final.phase == DELETED


async def test_a_running_claim_continues_as_new_every_few_checks_without_republishing(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """Memory per cached node stays flat: a running run holds at most RUNNING_CHECKS_PER_RUN
    `running_check` activities and no timer, and records no patch marker and no upsert (the search
    attributes and memo it would publish were carried over by continue-as-new)."""
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await check_drift(time_env, handle, 2 * RUNNING_CHECKS_PER_RUN + 1, world)

    latest = time_env.client.get_workflow_handle(handle.id)
    assert (await latest.describe()).run_id != handle.first_execution_run_id
    await wait_until_asleep(time_env, handle.id)
    kinds = {event.event_type for event in (await latest.fetch_history()).events}
    assert EventType.EVENT_TYPE_MARKER_RECORDED not in kinds
    assert EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES not in kinds
    assert EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED not in kinds
    assert EventType.EVENT_TYPE_TIMER_STARTED not in kinds
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    assert (await handle.result()).phase == DELETED


async def test_a_check_drift_signal_runs_the_check_at_once(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """The worker signals `check_drift` when a claim's NodePool or EC2NodeClass changes: the check runs
    then."""
    handle = await start(time_env, worker, state=running_state())
    started = await time_env.get_current_time()
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    world.drift_after_checks = 1
    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.check_drift, "NodePool default changed")
    drifted = await wait_until(handle, time_env, lambda s: bool(s.drift_reason), "Drifted")
    assert drifted.drift_checks == 1
    assert await time_env.get_current_time() - started < timedelta(minutes=30)
    await save_history(handle, "nodeclaim-check-drift-signal")
    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    assert (await handle.result()).phase == DELETED


async def test_a_check_drift_signal_before_the_running_phase_runs_the_check_as_it_begins(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """A node class changed while the node initialized: the request survives the continue-as-new into the
    running phase and the check runs as it begins."""
    world.ready_after_polls = 10**6  # initializing until the signal is in
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == INITIALIZING, "Initializing")
    started = await time_env.get_current_time()
    world.drift_after_checks = 1
    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.check_drift, "EC2NodeClass default changed")
    world.ready_after_polls = 0
    drifted = await wait_until(handle, time_env, lambda s: bool(s.drift_reason), "Drifted")
    assert drifted.drift_checks == 1
    assert await time_env.get_current_time() - started < timedelta(minutes=30)
    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    assert (await handle.result()).phase == DELETED


async def test_should_set_expired_before_draining_on_a_manual_expire(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.expire)
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    assert final.expired and final.conditions["Expired"] == "True"
    assert world.begin_inputs[0].expired
    assert final.termination_reason == "expired (manual)"


async def test_should_wait_out_pdb_refusals_and_record_drained(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.pdb_refusals = 3
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.drain, "maintenance")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-drain-pdb")
    assert final.phase == DELETED
    assert final.termination_reason == "maintenance"
    assert final.conditions["Drained"] == "True"
    assert world.calls.count("drain_step") == 3 + 2  # three refusals, then the two pods
    assert not any(step.force for step in world.drain_inputs)


async def test_should_force_the_drain_when_the_termination_grace_period_passes(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.pdb_refusals = 1_000_000  # a PDB that never allows
    handle = await start(time_env, worker, termination_grace_period="1m")
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.drain)
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    forced = [step.force for step in world.drain_inputs]
    assert forced[0] is False and forced[-1] is True


async def test_a_repair_signal_terminates_without_draining(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.repair, "Unhealthy: Node n has been Ready=False for 31m")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-repair")
    assert final.phase == DELETED
    assert final.termination_reason == "Unhealthy: Node n has been Ready=False for 31m"
    assert "drain_step" not in world.calls and "Drained" not in final.conditions
    assert world.calls.count("begin_termination") == 1 and world.terminate_calls >= 1


async def test_a_repair_signal_cuts_a_blocked_drain_short(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.pdb_refusals = 1_000_000  # a PDB that never allows: only repair ends this drain
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.drain, "maintenance")
    await wait_until(handle, time_env, lambda s: world.calls.count("drain_step") >= 2, "draining")
    await handle.signal(NodeClaimWorkflow.repair, "Unhealthy")
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    assert final.termination_reason == "maintenance"  # the first reason stays
    assert "Drained" not in final.conditions and world.terminate_calls >= 1


@workflow.defn(name="DisruptionController", sandboxed=False)
class ControllerStub:
    """Stands in for the disruption controller: records the `replace` requests and the
    `replacement_ready` signals it is sent."""

    def __init__(self) -> None:
        self.requests: list[list[str]] = []
        self.ready: list[str] = []

    @workflow.signal(name=DisruptionSignal.REPLACE)
    def replace(self, node_claim: str, reason: str = "") -> None:
        self.requests.append([node_claim, reason])

    @workflow.signal(name=DisruptionSignal.REPLACEMENT_READY)
    def replacement_ready(self, node_claim: str = "") -> None:
        self.ready.append(node_claim)

    @workflow.query(name="requests")
    def requested(self) -> list[list[str]]:
        return self.requests

    @workflow.query(name="ready")
    def ready_claims(self) -> list[str]:
        return self.ready

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


async def test_a_replace_signal_is_forwarded_to_the_disruption_controller(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """The claim does not replace itself: the controller launches the replacement and signals `delete`."""
    async with worker_on_fresh_queue(time_env.client, [ControllerStub], []) as controller_queue:
        controller = await time_env.client.start_workflow(
            ControllerStub.run, id=DISRUPTION_ID, task_queue=controller_queue
        )
        handle = await start(time_env, worker)
        await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
        await wait_until_asleep(time_env, handle.id)
        await handle.signal(NodeClaimWorkflow.replace, "new AMI")

        async def forwarded() -> list[list[str]]:
            requests: list[list[str]] = await controller.query(ControllerStub.requested)
            assert requests, "no request yet"
            return requests

        assert await eventually_async(forwarded, timeout=30, what="the forwarded request") == [
            ["default-abcde", "new AMI"]
        ]
        state: NodeClaimState = await handle.query(NodeClaimWorkflow.status)
        assert state.phase == RUNNING and not state.termination_reason  # it keeps running until `delete`
        await handle.signal(NodeClaimWorkflow.delete, "replaced by default-fghjk (new AMI)")
        final: NodeClaimState = await handle.result()
        await save_history(handle, "nodeclaim-replace")
    assert final.phase == DELETED
    assert "launch" in world.calls and world.launched == 1  # no replacement launched by the claim itself


async def test_a_replacement_tells_the_controller_waiting_for_it_once_it_is_initialized(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """A replacement's workflow is started with the controller as its waiter: it signals
    `replacement_ready` as it enters Running, once, and the Running run's input no longer carries it."""
    async with worker_on_fresh_queue(time_env.client, [ControllerStub], []) as controller_queue:
        controller = await time_env.client.start_workflow(
            ControllerStub.run, id=DISRUPTION_ID, task_queue=controller_queue
        )
        handle = await start(time_env, worker, waiter=DISRUPTION_ID)
        await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")

        async def told() -> list[str]:
            ready: list[str] = await controller.query(ControllerStub.ready_claims)
            assert ready, "not told yet"
            return ready

        assert await eventually_async(told, timeout=30, what="replacement_ready") == ["default-abcde"]
        running_run = await handle.fetch_history()
        started = running_run.events[0].workflow_execution_started_event_attributes
        assert b"waiter" not in started.input.payloads[0].data and b"Running" in started.input.payloads[0].data
        await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
        assert (await handle.result()).phase == DELETED
        await save_history(handle, "nodeclaim-replacement")
        assert await controller.query(ControllerStub.ready_claims) == ["default-abcde"]  # once


async def test_a_replacement_whose_launch_fails_tells_the_waiting_controller_it_ended(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.ice = True
    async with worker_on_fresh_queue(time_env.client, [ControllerStub], []) as controller_queue:
        controller = await time_env.client.start_workflow(
            ControllerStub.run, id=DISRUPTION_ID, task_queue=controller_queue
        )
        handle = await start(time_env, worker, waiter=DISRUPTION_ID)
        assert (await handle.result()).phase == DELETED
        assert await controller.query(ControllerStub.ready_claims) == ["default-abcde"]


async def test_a_replacement_whose_waiter_is_gone_runs_on(time_env: WorkflowEnvironment, worker: str) -> None:
    handle = await start(time_env, worker, waiter="disruption-terminated-long-ago")
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    assert (await handle.result()).phase == DELETED


async def test_a_replace_signal_without_a_controller_leaves_the_claim_running(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.replace)
    await time_env.sleep(timedelta(minutes=1))
    state: NodeClaimState = await handle.query(NodeClaimWorkflow.status)
    assert state.phase == RUNNING and not state.failure
    await handle.signal(NodeClaimWorkflow.delete)
    assert (await handle.result()).phase == DELETED


def running_state() -> NodeClaimState:
    """A claim's state as continue-as-new carries it once the node is Running."""
    return NodeClaimState(
        name="default-abcde", phase=RUNNING, node_pool="default", instance_id="i-0123",
        node_name="ip-10-0-0-1.us-west-2.compute.internal", conditions={"Initialized": "True"},
    )  # fmt: skip


async def test_a_signal_carried_over_by_continue_as_new_is_acted_on(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """A drain signalled in the workflow task that continues as new reaches the next run in its input."""
    handle = await start(time_env, worker, state=running_state(), pending_termination="manual drain")
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    assert final.termination_reason == "manual drain"
    assert "begin_termination" in world.calls and world.launched == 0


async def test_registration_waits_on_the_node_changed_signal_not_on_a_poll(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """The worker's Node watch signals `node_changed` when the claim's Node appears: registration looks
    again at once, not after its backstop timer (NODE_WAIT_FIRST)."""
    world.node_after_polls = 2
    with time_env.auto_time_skipping_disabled():
        handle = await start(time_env, worker)

        async def waiting() -> NodeClaimState | None:
            state: NodeClaimState = await handle.query(NodeClaimWorkflow.status)
            return state if state.waiting_for else None

        await eventually_async(waiting, timeout=30, what="registration to wait for the Node")
        started = await time_env.get_current_time()
        await handle.signal(NodeClaimWorkflow.node_changed, "Node of aws:///us-west-2a/i-0123 changed")

        async def registered() -> bool:
            return world.find_calls >= 2 and "register_node" in world.calls

        await eventually_async(registered, timeout=30, what="registration after the signal")
        assert await time_env.get_current_time() - started < timing.NODE_WAIT_FIRST
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    assert (await handle.result()).phase == DELETED
