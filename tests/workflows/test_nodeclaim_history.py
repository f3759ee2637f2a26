"""A NodeClaim idle for 30 days adds nothing to its history, and ends when the claim sweep expires it.

The running phase holds no timer and polls nothing (workflows.nodeclaim): a month without a signal is a
month without an event, a workflow task or a billable action. Expiry comes from outside, as the leader's
claim sweep sends it (activities.nodeclaim.sweep)."""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from tests.workflows.claim_status import wait_until_asleep
from tests.workflows.fakes import World
from tests.workflows.test_nodeclaim_operations import wait_until
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import DELETED, RUNNING, NodeClaimInput, NodeClaimState


async def test_a_node_idle_for_30_days_adds_no_event_and_ends_when_expired(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    inp = NodeClaimInput(name="default-month", node_pool="default")
    handle = await time_env.client.start_workflow(
        NodeClaimWorkflow.run, inp, id=workflow_id(inp.name), task_queue=worker
    )
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await wait_until_asleep(time_env, handle.id)
    latest = time_env.client.get_workflow_handle(handle.id)
    before = len((await latest.fetch_history()).events)

    await time_env.sleep(timedelta(days=30))
    await wait_until_asleep(time_env, handle.id)
    history = (await latest.fetch_history()).events
    assert len(history) == before, [e.event_type for e in history[before:]]
    assert EventType.EVENT_TYPE_TIMER_STARTED not in {e.event_type for e in history}
    assert world.drift_checks == 0

    await handle.signal(NodeClaimWorkflow.expire, "expired after 720h")
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    assert final.termination_reason == "expired after 720h"
    assert final.expired and final.conditions.get("Expired") == "True"
