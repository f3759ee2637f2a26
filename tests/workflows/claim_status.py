"""Talking to a NodeClaim workflow on the time-skipping test server only while it sleeps.

The test server mishandles a query or signal that arrives while a workflow task completes with
continue-as-new (the refused completion is never retried, and the run hangs), though Temporal itself
recovers. A claim continues as new at phase changes and every few running checks, so the tests query and
signal it only when its latest run has no workflow task in flight and sleeps on a timer: with time
skipping locked, nothing moves it then."""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from tests.eventually import eventually_async
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.nodeclaim_state import NodeClaimState

QUERY_DEADLINE = timedelta(seconds=5)
IDLE_AFTER = (EventType.EVENT_TYPE_TIMER_STARTED, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)


async def is_asleep(env: WorkflowEnvironment, workflow_id: str) -> bool:
    """True when the latest run's last event ends a workflow task and one of its timers is pending."""
    events = (await env.client.get_workflow_handle(workflow_id).fetch_history()).events
    if not events or events[-1].event_type not in IDLE_AFTER:
        return False
    pending = {e.event_id for e in events if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED}
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_TIMER_FIRED:
            pending.discard(event.timer_fired_event_attributes.started_event_id)
        elif event.event_type == EventType.EVENT_TYPE_TIMER_CANCELED:
            pending.discard(event.timer_canceled_event_attributes.started_event_id)
    return bool(pending)


async def wait_until_asleep(env: WorkflowEnvironment, workflow_id: str) -> None:
    """Wait (in real time, without skipping workflow time) until the claim sleeps on a timer."""

    async def asleep() -> bool:
        return await is_asleep(env, workflow_id)

    await eventually_async(asleep, timeout=30, what=f"{workflow_id} asleep on its timer")


async def claim_status_when_asleep(env: WorkflowEnvironment, handle: WorkflowHandle) -> NodeClaimState | None:
    """The claim's `status` when it sleeps on a timer; None when it does not yet (or the query timed
    out), so the caller skips some workflow time and polls again."""
    if not await is_asleep(env, handle.id):
        return None
    try:
        state: NodeClaimState = await handle.query(NodeClaimWorkflow.status, rpc_timeout=QUERY_DEADLINE)
    except RPCError as err:
        message = err.message.lower()
        timed_out = err.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED)
        if not (timed_out or "deadline" in message or "timeout" in message):
            raise
        return None
    return state
