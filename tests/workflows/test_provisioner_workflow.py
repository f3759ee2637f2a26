"""The provisioner batches pod signals into rounds and stays far below Temporal's per-run limits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tests.eventually import eventually_async
from tests.workflows.fakes import World
from tests.workflows.histories import save_history
from workflows import timing
from workflows.provisioner import BatchWindow, ProvisionerState, ProvisionerStatus, ProvisionerWorkflow


async def start(env: WorkflowEnvironment, task_queue: str) -> WorkflowHandle:
    return await env.client.start_workflow(
        ProvisionerWorkflow.run, ProvisionerState(), id="provisioner", task_queue=task_queue
    )


async def wait_rounds(env: WorkflowEnvironment, world: World, count: int) -> None:
    """Skip half a second of workflow time at a time until the provisioner has solved `count` rounds."""

    async def enough() -> bool:
        assert len(world.solve_rounds) >= count, f"{count} rounds expected, saw {world.solve_rounds}"
        return True

    await eventually_async(
        enough, timeout=120, what=f"{count} rounds", pause=lambda: env.sleep(timedelta(milliseconds=500))
    )


async def test_should_batch_signals_arriving_together_into_one_round(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    handle = await start(time_env, worker)
    for _ in range(5):
        await handle.signal(ProvisionerWorkflow.pods_pending, 2)
    await wait_rounds(time_env, world, 1)
    status: ProvisionerStatus = await handle.query(ProvisionerWorkflow.status)
    assert world.solve_rounds == [1]
    assert world.solve_triggers == [10]  # the signals' counts, summed into the round's input
    assert status.pending == 0

    async def plan_of_round_one() -> bool:
        status = await handle.query(ProvisionerWorkflow.status)
        assert (status.round, status.last_plan_round) == (1, 1)
        return True

    await eventually_async(
        plan_of_round_one, timeout=30, what="round 1's plan", pause=lambda: time_env.sleep(timedelta(milliseconds=200))
    )
    await handle.terminate("test over")
    await save_history(handle, "provisioner-batch")


async def test_a_signalled_batch_window_is_followed(time_env: WorkflowEnvironment, worker: str, world: World) -> None:
    """A worker set to Karpenter's BATCH_IDLE_DURATION=30s sends that window with its signal: no round
    starts while the default window (1 s idle) would have started one, and one does once 30 s pass."""
    handle = await start(time_env, worker)
    await handle.signal(ProvisionerWorkflow.pods_pending, args=[1, BatchWindow(idle_seconds=30, max_seconds=120)])
    await time_env.sleep(timedelta(seconds=20))
    assert world.solve_rounds == []
    await wait_rounds(time_env, world, 1)
    assert world.solve_rounds == [1]
    await handle.terminate("test over")
    await save_history(handle, "provisioner-batch-window")


async def test_should_start_a_round_on_an_empty_kick(time_env: WorkflowEnvironment, worker: str, world: World) -> None:
    handle = await start(time_env, worker)
    await handle.signal(ProvisionerWorkflow.pods_pending)
    await wait_rounds(time_env, world, 1)


async def test_should_continue_as_new_after_many_signals_and_keep_counting_rounds(
    time_env: WorkflowEnvironment, worker: str, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timing, "MAX_SIGNALS_PER_RUN", 3)
    handle = await start(time_env, worker)
    first_run = (await handle.describe()).run_id
    for _ in range(4):
        await handle.signal(ProvisionerWorkflow.pods_pending, 1)
    await wait_rounds(time_env, world, 1)

    async def continued_as_new() -> bool:
        return (await time_env.client.get_workflow_handle("provisioner").describe()).run_id != first_run

    await eventually_async(
        continued_as_new, timeout=60, what="a new run", pause=lambda: time_env.sleep(timedelta(milliseconds=200))
    )
    new = time_env.client.get_workflow_handle("provisioner")
    assert (await new.describe()).run_id != first_run
    await new.signal(ProvisionerWorkflow.pods_pending, 1)
    await wait_rounds(time_env, world, 2)
    assert world.solve_rounds == [1, 2]
