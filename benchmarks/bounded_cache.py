"""What a workflow cache smaller than the fleet costs and saves. Prints one JSON object on stdout; see
benchmarks/README.md.

    python benchmarks/bounded_cache.py [--claims 2000] [--max-cached 500] [--signals 100]

A Running NodeClaim workflow holds no timer and waits for a signal; its run is a handful of events (the
launch run continued as new into it). So a claim evicted from the worker's cache costs, when a signal
comes, one replay of that short history. This measures both sides with the real `NodeClaimWorkflow`
and the stand-in activities of benchmarks/scale.py, on a Temporal dev server (in memory), with the
worker child process `scale.py --claims` uses, its cache bounded at `--max-cached`:

- `--claims` claims are started at once and the clock runs until every one is Running (as
  `idle_cost.py` counts it); then the worker's RSS per running claim, after a malloc_trim, against its
  RSS before the first start.
- Once the worker is idle, `--signals` claims started first (the least recently used: evicted) and
  then `--signals` started last (cached) are each sent `check_drift` at once, and the time from each
  signal to its `running_check` completing is read from the histories' own timestamps (median and
  highest), with the worker's CPU seconds for each batch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python benchmarks/bounded_cache.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from benchmarks.idle_cost import burst_to_running, claim_names
from benchmarks.scale import MIB, claims_worker_child, rss_bytes, state_directory

CHECK_POLL_SECONDS = 0.5
IDLE_CPU_PER_SECOND = 0.05  # the worker counts as idle below this CPU per second, two seconds in a row


async def _wait_idle(pid: int, timeout: float) -> None:
    """Until the worker is idle (IDLE_CPU_PER_SECOND): the Running runs' first workflow tasks, which come
    after the Phase search attribute already reads Running, are all done."""
    worker = psutil.Process(pid)
    quiet = 0
    deadline = time.monotonic() + timeout
    last = sum(worker.cpu_times()[:2])
    while quiet < 2 and time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        now = sum(worker.cpu_times()[:2])
        quiet = quiet + 1 if now - last < IDLE_CPU_PER_SECOND else 0
        last = now


async def _check_latency(client: Client, workflow_id: str) -> float | None:
    """Seconds from the run's last `check_drift` signal to the `running_check` completed after it; None
    while it has not completed."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    signalled = None
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            if event.workflow_execution_signaled_event_attributes.signal_name == "check_drift":
                signalled = event.event_time.ToDatetime()
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED and signalled is not None:
            return (event.event_time.ToDatetime() - signalled).total_seconds()
    return None


async def _signal_batch(client: Client, names: Sequence[str], pid: int, timeout: float) -> dict[str, Any]:
    """`check_drift` to every claim at once; the latencies once all completed, and the worker's CPU."""
    from workflows.messages import NodeClaimSignal
    from workflows.nodeclaim import workflow_id

    worker = psutil.Process(pid)
    cpu_before = sum(worker.cpu_times()[:2])
    ids = [workflow_id(name) for name in names]
    await asyncio.gather(
        *(client.get_workflow_handle(i).signal(NodeClaimSignal.CHECK_DRIFT, "bounded-cache benchmark") for i in ids)
    )
    latencies: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(latencies) < len(ids) and time.monotonic() < deadline:
        await asyncio.sleep(CHECK_POLL_SECONDS)
        for i in ids:
            if i not in latencies and (seconds := await _check_latency(client, i)) is not None:
                latencies[i] = seconds
    cpu = sum(worker.cpu_times()[:2]) - cpu_before
    found = sorted(latencies.values())
    return {
        "signalled": len(ids),
        "checked": len(found),
        "latency_seconds_median": round(statistics.median(found), 3) if found else None,
        "latency_seconds_max": round(found[-1], 3) if found else None,
        "worker_cpu_seconds": round(cpu, 2),
    }


async def _measure(address: str, claims: int, signals: int, timeout: float, pid: int) -> dict[str, Any]:
    from workers.settings import Settings
    from workers.temporal.client import connect, register_search_attributes

    client = await connect(Settings(temporal_address=address))
    await register_search_attributes(client)
    names = claim_names(claims, "cache")
    before = rss_bytes(pid)
    _, running, seconds = await burst_to_running(client, "cache", names, timeout)
    await _wait_idle(pid, timeout)
    evicted = await _signal_batch(client, names[:signals], pid, timeout)
    cached = await _signal_batch(client, names[-signals:], pid, timeout)
    return {
        "claims_running": running,
        "seconds_to_all_running": round(seconds, 2) if seconds is not None else None,
        "signals_to_evicted_claims": evicted,
        "signals_to_cached_claims": cached,
        "_rss_before": before,
    }


def run(claims: int, max_cached: int, signals: int, timeout: float) -> dict[str, Any]:
    """See the module docstring."""
    result: dict[str, Any] = {"benchmark": "bounded-cache", "claims": claims, "max_cached": max_cached}
    with state_directory(None) as state, claims_worker_child(state, max_cached) as worker:
        result |= asyncio.run(_measure(worker.address, claims, signals, timeout, worker.pid))
        worker.trim()
        after = rss_bytes(worker.pid)
    before = result.pop("_rss_before")
    result |= {
        "worker_rss_mb_before": round(before / MIB, 1),
        "worker_rss_mb_after": round(after / MIB, 1),
        "rss_per_running_claim_kib": round((after - before) / 1024 / max(result["claims_running"], 1), 1),
    }
    return result


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=2000, help="Running claims (2000)")
    parser.add_argument("--max-cached", type=int, default=500, help="the worker's max_cached_workflows (500)")
    parser.add_argument("--signals", type=int, default=100, help="claims signalled in each batch (100)")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up waiting after this long (600)")
    args = parser.parse_args(argv)
    if args.max_cached < 1:
        parser.error(f"--max-cached {args.max_cached}: at least 1")
    if not 0 < args.signals <= args.claims // 2:
        parser.error(f"--signals {args.signals}: between 1 and half of --claims ({args.claims // 2})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args.claims, args.max_cached, args.signals, args.timeout)
    print(json.dumps(result))
    batches = (result["signals_to_evicted_claims"], result["signals_to_cached_claims"])
    done = result["claims_running"] >= args.claims and all(b["checked"] == args.signals for b in batches)
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
