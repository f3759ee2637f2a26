"""Where a cached Running NodeClaim workflow's memory goes: the worker and the claims in one process, so
the heap can be read (and profiled with heaptrack) at the moment every claim is cached and idle. Prints
one JSON object on stdout; see benchmarks/README.md ("Where each kilobyte goes").

    python benchmarks/workflow_memory.py [--claims 2000] [--sdk-metrics]
    heaptrack -o /tmp/wf python benchmarks/workflow_memory.py --claims 1000 --exit-cached

The real `NodeClaimWorkflow` with the stand-in activities of benchmarks/scale.py and the worker tuning of
workers.settings, on a Temporal dev server (in memory). 20 claims are run first (one-time costs out of the
baseline); then `--claims` are started and the clock waits until every launch run has continued as new
and the worker's cache holds every Running run, plus SETTLE_SECONDS. Reported per cached workflow, after
a gc and glibc `malloc_trim`: the RSS growth, and the growth of what malloc holds in use (all arenas and
mmapped chunks: Core SDK, protobuf and large Python objects; Python's small objects live in its own
arenas, in RSS only). `--exit-cached` ends the process right after the reading, so heaptrack reports
what was live then as "leaked". Exit status 1 when `--timeout` passed before every claim was Running and
cached (`all_running_and_cached` false: the figures then count fewer workflows than `--claims`)."""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import ctypes.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python benchmarks/workflow_memory.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from benchmarks.idle_cost import claim_names, start_all
from benchmarks.scale import claims_worker, release_free_memory, state_directory

WARM_CLAIMS = 20
SETTLE_SECONDS = 20.0
TASK_QUEUE = "workflow-memory"


_MALLINFO2_FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2_FIELDS.split()]


def _libc() -> ctypes.CDLL:
    name = ctypes.util.find_library("c")
    if not name:
        raise SystemExit("needs glibc (mallinfo2, malloc_trim)")
    libc = ctypes.CDLL(name)
    libc.mallinfo2.restype = _MallInfo2
    return libc


def _readings(libc: ctypes.CDLL) -> tuple[int, int]:
    """(this process's RSS, without the dev server child; bytes malloc holds in use) after a gc and a
    malloc_trim."""
    release_free_memory()
    info = libc.mallinfo2()
    return psutil.Process().memory_info().rss, info.uordblks + info.hblkhd


async def _measure(
    address: str, claims: int, timeout: float, exit_now: Callable[[], None] | None, sdk_metrics: bool
) -> dict[str, Any]:
    """The reading (see the module docstring). With `exit_now`, call it with the cache still full and end the
    process there (`--exit-cached`); with `sdk_metrics`, the worker's runtime exports the SDK's metrics, as
    the worker's does by default (`temporal_metrics_port`)."""
    from devstack.temporal import free_port
    from workers.metrics_server import temporal_runtime
    from workers.settings import Settings
    from workers.temporal.client import connect, register_search_attributes

    libc = _libc()
    settings = Settings.from_env().with_values(
        temporal_address=address,
        task_queue=TASK_QUEUE,
        max_cached_workflows=claims + WARM_CLAIMS + 1000,  # nothing evicted: count every run
    )
    runtime = temporal_runtime(free_port(), "127.0.0.1") if sdk_metrics else None
    client = await connect(settings, runtime=runtime)
    await register_search_attributes(client)
    worker = claims_worker(client, settings)
    cached = worker._workflow_worker._running_workflows if worker._workflow_worker else {}  # the SDK's cache
    async with worker:
        await start_all(client, claim_names(WARM_CLAIMS, "warm"), TASK_QUEUE)
        while len(cached) < WARM_CLAIMS:
            await asyncio.sleep(0.2)
        await asyncio.sleep(2.0)
        rss_before, heap_before = _readings(libc)
        began = time.monotonic()
        await start_all(client, claim_names(claims, "mem"), TASK_QUEUE)
        query = "WorkflowId STARTS_WITH 'nodeclaim-mem-' AND ExecutionStatus = 'ContinuedAsNew'"
        complete = False
        while not complete and time.monotonic() - began < timeout:
            await asyncio.sleep(1.0)
            complete = (await client.count_workflows(query)).count >= claims and len(cached) >= claims + WARM_CLAIMS
        await asyncio.sleep(SETTLE_SECONDS)
        rss_after, heap_after = _readings(libc)
        result = {
            "benchmark": "workflow-memory",
            "claims": claims,
            "sdk_metrics": sdk_metrics,
            "all_running_and_cached": complete,
            "cached_workflows": len(cached),
            "rss_per_cached_workflow_kib": round((rss_after - rss_before) / 1024 / claims, 1),
            "malloc_in_use_per_cached_workflow_kib": round((heap_after - heap_before) / 1024 / claims, 1),
        }
        if exit_now is not None:  # heaptrack reports what is live now as leaked
            print(json.dumps(result), flush=True)
            exit_now()
            os._exit(0 if complete else 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=2000, help="claims cached and idle (2000)")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up waiting after this long (600)")
    parser.add_argument("--sdk-metrics", action="store_true", help="export the SDK's metrics (the worker's default)")
    parser.add_argument("--exit-cached", action="store_true", help="exit at the reading (for heaptrack)")
    args = parser.parse_args()

    from devstack import temporal
    from workers.cli.dev import stack_config

    with state_directory(None) as state:
        server = temporal.TemporalDevServer(temporal.free_ports(), None, False, state / "temporal.log",
                                            stack_config(start_worker=False).search_attributes)  # fmt: skip
        server.start(attempts=temporal.PORT_ATTEMPTS, new_ports=temporal.free_ports)
        try:
            exit_now = server.stop if args.exit_cached else None
            result = asyncio.run(_measure(server.address, args.claims, args.timeout, exit_now, args.sdk_metrics))
        finally:
            server.stop()
    print(json.dumps(result))
    sys.exit(0 if result["all_running_and_cached"] else 1)


if __name__ == "__main__":
    main()
