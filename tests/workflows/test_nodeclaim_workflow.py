"""The NodeClaim workflow reads as the lifecycle: launch, register, initialize, run, drain, terminate."""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tests.eventually import eventually_async
from tests.workflows.claim_status import claim_status_when_asleep, wait_until_asleep
from tests.workflows.fakes import World
from tests.workflows.histories import save_history
from tests.workflows.workers import worker_on_fresh_queue
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import DELETED, RUNNING, NodeClaimInput, NodeClaimState


async def start(env: WorkflowEnvironment, task_queue: str, **kwargs: object) -> WorkflowHandle:
    inp = NodeClaimInput(name="default-abcde", node_pool="default", **kwargs)  # type: ignore[arg-type]
    return await env.client.start_workflow(NodeClaimWorkflow.run, inp, id=workflow_id(inp.name), task_queue=task_queue)


async def wait_for_phase(handle: WorkflowHandle, env: WorkflowEnvironment, phase: str) -> NodeClaimState:
    """Query `status` until the claim is in `phase`, skipping a second of workflow time between polls."""

    async def in_phase() -> NodeClaimState | None:
        state = await claim_status_when_asleep(env, handle)
        if state is None:
            return None
        assert state.phase == phase, state
        return state

    return await eventually_async(
        in_phase, timeout=120, what=f"phase {phase}", pause=lambda: env.sleep(timedelta(seconds=1))
    )


async def test_should_run_the_whole_lifecycle_when_the_claim_is_deleted(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.node_after_polls = 3
    world.ready_after_polls = 2
    handle = await start(time_env, worker)
    running = await wait_for_phase(handle, time_env, RUNNING)
    assert running.node_name == "ip-10-0-0-1.us-west-2.compute.internal"
    assert running.instance_type == "m5.large"

    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-lifecycle")

    assert final.phase == DELETED
    assert world.launched == 1
    assert world.calls == [
        "launch", "mark_launched", "register_node", "initialized", "begin_termination",
        "drain_step", "drain_step", "finalize",
    ]  # fmt: skip
    assert world.terminate_calls == 2
    assert [i.registration_failed for i in world.begin_inputs] == [False]


async def test_a_claim_that_is_not_cached_answers_every_signal_by_replaying_its_run(
    time_env: WorkflowEnvironment, world: World
) -> None:
    # The worker's cache is bounded (workers.settings max_cached_workflows): an idle Running claim is
    # evicted first, and its next signal replays its short Running run. Here nothing stays cached.
    activities = world.activities()
    async with worker_on_fresh_queue(time_env.client, [NodeClaimWorkflow], activities, max_cached_workflows=0) as queue:
        handle = await start(time_env, queue)
        await wait_for_phase(handle, time_env, RUNNING)
        await wait_until_asleep(time_env, handle.id)
        await handle.signal(NodeClaimWorkflow.check_drift, "node class changed")

        async def checked() -> bool:
            return world.drift_checks == 1

        await eventually_async(checked, timeout=30, what="the running check")
        await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
        final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    assert world.calls == [
        "launch", "mark_launched", "register_node", "initialized", "begin_termination",
        "drain_step", "drain_step", "finalize",
    ]  # fmt: skip


async def test_should_delete_the_claim_when_every_offering_is_out_of_capacity(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.ice = True
    handle = await start(time_env, worker)
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-insufficient-capacity")
    assert final.phase == DELETED
    assert world.calls == ["launch", "launch_failed:InsufficientCapacity"]
    assert "InsufficientCapacity" in final.failure


async def test_should_terminate_the_instance_when_the_node_never_registers(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.node_after_polls = -1
    handle = await start(time_env, worker, registration_ttl="3m")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-registration-timeout")
    assert final.phase == DELETED
    assert "did not register within 3m" in final.termination_reason
    assert "register_node" not in world.calls
    assert world.calls[-1] == "finalize"
    assert [i.registration_failed for i in world.begin_inputs] == [True]  # the NodePool is told


async def test_should_expire_the_node_when_the_claim_sweep_says_its_expire_after_passed(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    handle = await start(time_env, worker)
    await wait_for_phase(handle, time_env, RUNNING)
    await wait_until_asleep(time_env, handle.id)
    await handle.signal(NodeClaimWorkflow.expire, "expired after 1h")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-expired")
    assert final.phase == DELETED
    assert final.termination_reason == "expired after 1h"
    assert final.expired and final.conditions.get("Expired") == "True"


async def test_should_drain_and_terminate_on_a_manual_drain_signal(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    handle = await start(time_env, worker)
    await wait_for_phase(handle, time_env, RUNNING)
    await handle.signal(NodeClaimWorkflow.drain, "")
    final: NodeClaimState = await handle.result()
    assert final.termination_reason == "manual drain"
    assert "drain_step" in world.calls
