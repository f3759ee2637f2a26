"""Polling a NodeClaim workflow's `status` query on the time-skipping test server."""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from workflows.nodeclaim import NodeClaimWorkflow
from workflows.nodeclaim_state import NodeClaimState

QUERY_DEADLINE = timedelta(seconds=5)


async def claim_status_or_none(handle: WorkflowHandle) -> NodeClaimState | None:
    """The claim's `status`, or None when the query timed out.

    A query that lands on a run just closed by continue-as-new gets no answer from the time-skipping
    server, so each query has its own deadline and the caller polls again."""
    try:
        state: NodeClaimState = await handle.query(NodeClaimWorkflow.status, rpc_timeout=QUERY_DEADLINE)
    except RPCError as err:
        message = err.message.lower()
        timed_out = err.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED)
        if not (timed_out or "deadline" in message or "timeout" in message):
            raise
        return None
    return state
