"""What an idle node costs (issue 15): Temporal actions, history events and worker memory of NodeClaim
workflows with default settings. Prints one JSON object on stdout; see benchmarks/README.md.

    python benchmarks/idle_cost.py [--claims 1000] [--window 60] [--day-claims 10] [--days 7]

Two parts, both running the real `NodeClaimWorkflow` with the stand-in activities of
benchmarks/scale.py (a launch that succeeds, a Node found and initialized at once: no EC2, no
Kubernetes), and the worker's default claim settings (workers.settings). Nothing signals the claims
here: the running phase holds no timer, so an idle claim writes no event at all (expiry and drift reach
it as signals from the leader's claim sweep, one per expired or drifted node, none per idle one):

1. Burst, on a Temporal dev server (in memory) in real time, with a worker child process as
   `scale.py --claims` runs it: `--claims` NodeClaim workflows are started at once (through the
   product's TemporalStarter, at most START_CONCURRENCY start calls in flight) and the clock runs until
   every one's Phase search attribute reads Running (counted through visibility every 0.5 s). It
   reports claims per second to Running, the history events one claim takes to reach Running (by
   type, from a sample of the claims), and the worker's RSS per cached running workflow
   ((RSS once all are Running, after a malloc_trim) - RSS before the first start) / claims. Then it
   holds `--window` seconds and counts every history event, by type, that all the claims wrote in it.
2. Day, on the time-skipping test server: `--day-claims` claims reach Running, then `--days` of
   workflow time pass (timers fire as they fall due). Every event of every run in that window is
   counted by type, and the billable actions in it give actions per node per day.

A Temporal Cloud billable action, by Temporal's published definition ("Temporal Cloud Actions" in the
Temporal Cloud documentation), is: a workflow started (by a client, signal-with-start,
continue-as-new or a child workflow start); a workflow reset; a timer started (including the implicit
timers of a wait with a timeout); a search attribute upsert command (several attributes in one command
count once; those given at start do not count); a signal sent (from a client or a workflow); a query
or an update received by a worker; a side effect recorded; an activity started or retried, and an
activity heartbeat recorded; a local activity (all of them in one workflow task count once). Workflow
tasks, activity completions, timer firings and memo changes are no actions. Counted from history
here: WorkflowExecutionStarted, TimerStarted, UpsertWorkflowSearchAttributes, WorkflowExecutionSignaled
(the receiving side of each signal), MarkerRecorded, and ActivityTaskStarted once per attempt. Queries
and heartbeats leave no event; the NodeClaim workflow's activities do not heartbeat while it runs, and
the benchmark sends no queries.

Targets: at most 30 billable actions per running node per day; at least 20 claims per second to
Running from the burst; at most 50 KiB per cached running workflow.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python benchmarks/idle_cost.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from benchmarks.scale import MIB, TASK_QUEUE, claims_worker_child, rss_bytes, standin_activity, state_directory

TARGET_ACTIONS_PER_NODE_PER_DAY = 30.0
TARGET_CLAIMS_PER_SECOND = 20.0
TARGET_KIB_PER_WORKFLOW = 50.0
START_CONCURRENCY = 100
RUNNING_POLL_SECONDS = 0.5
EVENT_SAMPLE = 20  # claims whose histories give the events to Running
BILLABLE = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    EventType.EVENT_TYPE_TIMER_STARTED,
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    EventType.EVENT_TYPE_MARKER_RECORDED,
}


def event_name(event: HistoryEvent) -> str:
    return EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")


def billable_actions(event: HistoryEvent) -> int:
    """The Temporal Cloud actions the event stands for (see the module docstring)."""
    if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        return max(1, event.activity_task_started_event_attributes.attempt)
    return 1 if event.event_type in BILLABLE else 0


async def runs(client: Client, workflow_id: str) -> list[list[HistoryEvent]]:
    """Every run of the workflow, oldest first, following continue-as-new from the first run."""
    first = await client.get_workflow_handle(workflow_id).describe()
    run_id: str | None = first.raw_description.workflow_execution_info.first_run_id or first.run_id
    found: list[list[HistoryEvent]] = []
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        found.append(list(history.events))
        last = history.events[-1]
        if last.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            break
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return found


def events_to_running(histories: Iterable[list[list[HistoryEvent]]]) -> dict[str, Any]:
    """Events of the run that reached Running (it ends by continuing as new into the Running run), per
    claim: the mean, and the mean by type."""
    counts: Counter[str] = Counter()
    claims = 0
    for claim_runs in histories:
        first = claim_runs[0]
        counts.update(event_name(e) for e in first)
        claims += 1
    claims = max(claims, 1)
    return {
        "events_per_claim_to_running": round(sum(counts.values()) / claims, 1),
        "events_to_running_by_type": {name: round(n / claims, 2) for name, n in sorted(counts.items())},
    }


def window_counts(
    histories: Iterable[list[list[HistoryEvent]]], start: datetime, end: datetime
) -> tuple[Counter[str], int]:
    """Events by type, and billable actions, of every run between `start` and `end`."""
    counts: Counter[str] = Counter()
    actions = 0
    for claim_runs in histories:
        for run in claim_runs:
            for event in run:
                at = event.event_time.ToDatetime(tzinfo=start.tzinfo)
                if start <= at < end:
                    counts[event_name(event)] += 1
                    actions += billable_actions(event)
    return counts, actions


def claim_names(count: int, prefix: str) -> list[str]:
    return [f"{prefix}-{i:06d}" for i in range(count)]


async def start_all(client: Client, names: Sequence[str], task_queue: str) -> None:
    """Start the claims through the product's starter, at most START_CONCURRENCY calls in flight."""
    from workers.temporal.starter import TemporalStarter
    from workflows.nodeclaim_state import ClaimSettings, node_claim_input

    settings = ClaimSettings()
    starter = TemporalStarter(client, task_queue, asyncio.get_running_loop(), settings.registration_ttl)
    gate = asyncio.Semaphore(START_CONCURRENCY)

    async def start(name: str) -> None:
        async with gate:
            await starter.start_node_claim_async(node_claim_input(name, "", "default", None, settings))

    await asyncio.gather(*(start(name) for name in names))


async def count_running(client: Client, prefix: str) -> int:
    query = f'WorkflowType = "NodeClaim" AND Phase = "Running" AND WorkflowId STARTS_WITH "nodeclaim-{prefix}"'
    return (await client.count_workflows(query)).count


async def burst_to_running(
    client: Client, prefix: str, names: Sequence[str], timeout: float
) -> tuple[float, int, float | None]:
    """Start the claims `names` (all of `prefix`) at once and count them Running every
    RUNNING_POLL_SECONDS until all are or `timeout` passes: (seconds to start them all, how many are
    Running, seconds until all were or None)."""
    began = time.monotonic()
    await start_all(client, names, TASK_QUEUE)
    started = time.monotonic() - began
    running = 0
    while time.monotonic() - began < timeout:
        running = await count_running(client, prefix)
        if running >= len(names):
            break
        await asyncio.sleep(RUNNING_POLL_SECONDS)
    return started, running, time.monotonic() - began if running >= len(names) else None


# -- part 1: the burst on the dev server ------------------------------------------------------------------


async def _burst(address: str, claims: int, window: float, timeout: float, pid: int) -> dict[str, Any]:
    from workers.settings import Settings
    from workers.temporal.client import connect, register_search_attributes
    from workflows.nodeclaim import workflow_id

    client = await connect(Settings(temporal_address=address))
    await register_search_attributes(client)
    names = claim_names(claims, "idle")
    before = rss_bytes(pid)
    started, running, seconds = await burst_to_running(client, "idle", names, timeout)
    sample = [await runs(client, workflow_id(name)) for name in names[:EVENT_SAMPLE]]
    window_start = datetime.now().astimezone()
    await asyncio.sleep(window)
    window_end = datetime.now().astimezone()
    histories = [await runs(client, workflow_id(name)) for name in names]
    counts, actions = window_counts(histories, window_start, window_end)
    return {
        "claims": claims,
        "claims_running": running,
        "seconds_to_start_all": round(started, 2),
        "seconds_to_all_running": round(seconds, 2) if seconds is not None else None,
        "claims_per_second_to_running": round(claims / seconds, 1) if seconds else None,
        **events_to_running(sample),
        "window_seconds": window,
        "window_events_by_type": dict(sorted(counts.items())),
        "window_billable_actions": actions,
        "_rss_before": before,
    }


def run_burst(claims: int, window: float, timeout: float, state_dir: Path | None) -> dict[str, Any]:
    """Part 1 (see the module docstring), with the dev server and worker child as scale.py runs them."""
    with state_directory(state_dir) as state, claims_worker_child(state, claims + 100) as worker:
        result = asyncio.run(_burst(worker.address, claims, window, timeout, worker.pid))
        worker.trim()
        after = rss_bytes(worker.pid)
    before = result.pop("_rss_before")
    running = max(result["claims_running"], 1)
    result |= {
        "worker_rss_mb_before": round(before / MIB, 1),
        "worker_rss_mb_after": round(after / MIB, 1),
        "rss_per_cached_running_workflow_kib": round((after - before) / 1024 / running, 1),
    }
    return result


# -- part 2: a day of idle nodes on the time-skipping server ---------------------------------------------


async def run_day(claims: int, days: float) -> dict[str, Any]:
    """Part 2 (see the module docstring)."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import Worker

    from workers.temporal.client import register_search_attributes
    from workers.temporal.payload_converter import shared_pydantic_data_converter
    from workflows.nodeclaim import NodeClaimWorkflow, workflow_id

    binary = Path(sys.executable).parent / "temporal-test-server"
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(binary) if binary.exists() else shutil.which("temporal-test-server"),
        test_server_startup_timeout=timedelta(seconds=60),
        data_converter=shared_pydantic_data_converter,
    )
    async with env:
        await register_search_attributes(env.client)
        names = claim_names(claims, "day")
        with ThreadPoolExecutor(max_workers=4) as executor:
            async with Worker(env.client, task_queue=TASK_QUEUE, workflows=[NodeClaimWorkflow],
                              activities=[standin_activity], activity_executor=executor):  # fmt: skip
                with env.auto_time_skipping_disabled():
                    await start_all(env.client, names, TASK_QUEUE)
                    for name in names:
                        handle = env.client.get_workflow_handle(workflow_id(name))
                        while (await handle.query(NodeClaimWorkflow.status)).phase != "Running":
                            await asyncio.sleep(0.1)
                start = await env.get_current_time()
                await env.sleep(timedelta(days=days))
                end = await env.get_current_time()
                histories = [await runs(env.client, workflow_id(name)) for name in names]
    counts, actions = window_counts(histories, start, end)
    span_days = (end - start).total_seconds() / 86400
    return {
        "day_claims": claims,
        "days": round(span_days, 2),
        "events_per_node_per_day_by_type": {k: round(v / claims / span_days, 2) for k, v in sorted(counts.items())},
        "billable_actions_per_node_per_day": round(actions / claims / span_days, 2),
    }


# -- command line ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/idle_cost.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--claims", type=int, default=1000, help="claims in the burst (1000)")
    parser.add_argument("--window", type=float, default=60.0, help="seconds to count events after the burst (60)")
    parser.add_argument("--day-claims", type=int, default=10, help="claims held on the time-skipping server (10)")
    parser.add_argument("--days", type=float, default=7.0, help="days of workflow time they are held (7)")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up on the burst after this long (600)")
    parser.add_argument("--state-dir", type=Path, default=None, help="keep state and logs here (default: a temp dir)")
    args = parser.parse_args(argv)
    for name in ("claims", "day_claims"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: give at least 1")
    for name in ("window", "days", "timeout"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} {getattr(args, name)}: give a positive number")
    if args.days >= 30:
        parser.error(f"--days {args.days}: give under 30 (expireAfter, 720h, ends the claims at 30 days)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    burst = run_burst(args.claims, args.window, args.timeout, args.state_dir)
    day = asyncio.run(run_day(args.day_claims, args.days))
    result = {"benchmark": "idle-cost", **burst, **day}
    result["targets"] = {
        "billable_actions_per_node_per_day": TARGET_ACTIONS_PER_NODE_PER_DAY,
        "claims_per_second_to_running": TARGET_CLAIMS_PER_SECOND,
        "rss_per_cached_running_workflow_kib": TARGET_KIB_PER_WORKFLOW,
    }
    rate = result["claims_per_second_to_running"]
    result["targets_met"] = (
        result["billable_actions_per_node_per_day"] <= TARGET_ACTIONS_PER_NODE_PER_DAY
        and rate is not None
        and rate >= TARGET_CLAIMS_PER_SECOND
        and result["rss_per_cached_running_workflow_kib"] <= TARGET_KIB_PER_WORKFLOW
    )
    print(json.dumps(result), flush=True)
    return 0 if result["seconds_to_all_running"] is not None else 1


if __name__ == "__main__":
    # Leave without interpreter finalization: after two event loops with Temporal clients, the SDK's
    # runtime threads can abort it (PyGILState_Release) once the result is already printed.
    os._exit(main())
