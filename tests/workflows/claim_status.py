"""Talking to a NodeClaim workflow on the time-skipping test server only while it sleeps.

The test server mishandles a query or signal that arrives while a workflow task completes with
continue-as-new (the refused completion is never retried, and the run hangs), though Temporal itself
recovers. A claim continues as new at phase changes and every few running checks, so the tests query and
signal it only when its latest run has no workflow task or activity in flight and waits on a timer or for
a signal: with time skipping locked, nothing moves it then."""

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
# The commands a workflow task may end with that leave the run waiting (no activity, no new task).
AT_REST = (
    EventType.EVENT_TYPE_TIMER_STARTED,
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
)
ACTIVITY_CLOSED = tuple(
    f"activity_task_{outcome}_event_attributes" for outcome in ("completed", "failed", "timed_out", "canceled")
)


async def is_asleep(env: WorkflowEnvironment, workflow_id: str) -> bool:
    """True when the latest run's last workflow task completed with nothing after it but AT_REST commands,
    and none of its activities is in flight: it waits on a timer or for a signal (a Running claim holds no
    timer)."""
    events = (await env.client.get_workflow_handle(workflow_id).fetch_history()).events
    completed = [i for i, e in enumerate(events) if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
    if not completed or any(e.event_type not in AT_REST for e in events[completed[-1] + 1 :]):
        return False
    in_flight = {e.event_id for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED}
    for event in events:
        for closed in ACTIVITY_CLOSED:
            if event.HasField(closed):
                in_flight.discard(getattr(event, closed).scheduled_event_id)
    return not in_flight


async def wait_until_asleep(env: WorkflowEnvironment, workflow_id: str) -> None:
    """Wait (in real time, without skipping workflow time) until the claim waits on a timer or a signal."""

    async def asleep() -> bool:
        return await is_asleep(env, workflow_id)

    await eventually_async(asleep, timeout=30, what=f"{workflow_id} asleep")


async def claim_status_when_asleep(env: WorkflowEnvironment, handle: WorkflowHandle) -> NodeClaimState | None:
    """The claim's `status` when it is asleep (is_asleep); None when it does not yet (or the query timed
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
