"""`nodeflow worker`: run the Temporal worker and the Kubernetes watchers (the in-cluster Deployment's
command, and what `nodeflow dev` starts as a child process)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from workers import settings as settings_mod
from workers.metrics_server import MetricsPortError
from workers.process_exit import exiting_after
from workers.temporal_client import TemporalSettingError
from workers.worker import run_worker


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("worker", help="run the nodeflow worker (Temporal worker + watchers)")
    settings_mod.add_arguments(parser)
    parser.add_argument("--log-level", default="INFO")
    parser.set_defaults(func=exiting_after(run))  # a failed connect must not abort in finalization


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = settings_mod.Settings.from_env().with_args(args)
    except ValueError as problem:
        print(f"nodeflow worker: {problem}", file=sys.stderr)
        return 2

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run_worker(settings, stop)

    try:
        asyncio.run(main())
    # the connection, the namespace or its owner, a metrics port taken: one line, no traceback
    except (TemporalSettingError, MetricsPortError) as problem:
        print(f"nodeflow worker: {problem}", file=sys.stderr)
        return 1
    return 0
