"""A NodeClaim living 30 days with drift checks keeps every run's history far under Temporal's limits.

Each run's length is bounded by timing.MAX_HISTORY_EVENTS whatever the check interval; the interval only
sets how many runs a month takes. The default (1h, ~10 s here) keeps the suite fast; set
NODEFLOW_TEST_30D_DRIFT_INTERVAL=5m to run the production cadence (~8,600 checks, about two minutes).
"""

from __future__ import annotations

import os
import time

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from apis.duration import parse_duration
from tests.workflows.fakes import World
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import DELETED, NodeClaimInput, NodeClaimState

MAX_EVENTS_PER_RUN = 2500
DRIFT_INTERVAL = os.environ.get("NODEFLOW_TEST_30D_DRIFT_INTERVAL", "1h")


async def run_lengths(env: WorkflowEnvironment, handle: WorkflowHandle) -> list[int]:
    """Events per run, following the continue-as-new chain from the first run."""
    lengths: list[int] = []
    run_id = handle.first_execution_run_id or handle.run_id
    while run_id:
        history = await env.client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
        lengths.append(len(history.events))
        last = history.events[-1]
        if last.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            break
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return lengths


async def test_a_node_living_30_days_continues_as_new_and_ends_deleted(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    started = time.monotonic()
    inp = NodeClaimInput(name="default-month", node_pool="default", expire_after="720h",
                         drift_check_interval=DRIFT_INTERVAL)  # fmt: skip
    handle = await time_env.client.start_workflow(
        NodeClaimWorkflow.run, inp, id=workflow_id(inp.name), task_queue=worker
    )
    final: NodeClaimState = await handle.result()
    lengths = await run_lengths(time_env, handle)
    print(f"30 days: {len(lengths)} runs, max {max(lengths)} events, {time.monotonic() - started:.1f}s")

    assert final.phase == DELETED
    assert final.termination_reason == "expired after 720h"
    assert final.expired and final.conditions.get("Expired") == "True"
    assert len(lengths) >= 2, "the history never continued as new"
    assert max(lengths) < MAX_EVENTS_PER_RUN
    interval = parse_duration(DRIFT_INTERVAL)
    assert interval is not None
    assert world.drift_checks >= (30 * 24 * 3600) // interval.total_seconds() - 2  # one per interval, all month
