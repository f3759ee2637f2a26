"""`nodeflow worker`: run the Temporal worker and the Kubernetes watchers (the in-cluster Deployment's
command, and what `nodeflow dev` starts as a child process). Logs go to stderr as text or JSON lines
(`--log-format`, workers.log_format); traces go where the OTEL_* variables say (workers.tracing)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from workers import settings as settings_mod
from workers.cli.process_exit import exiting_after
from workers.log_format import add_argument as add_log_format_argument
from workers.log_format import configure_logging, log_format
from workers.metrics_server import MetricsPortError
from workers.temporal.client import TemporalSettingError
from workers.tracing import Tracing, tracing_from_env
from workers.worker import run_worker


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("worker", help="run the nodeflow worker (Temporal worker + watchers)")
    settings_mod.add_arguments(parser)
    parser.add_argument("--log-level", default="INFO")
    add_log_format_argument(parser)
    parser.set_defaults(func=exiting_after(run))  # a failed connect must not abort in finalization


def run(args: argparse.Namespace) -> int:
    try:
        fmt = log_format(args.log_format)
        configure_logging(getattr(logging, str(args.log_level).upper(), logging.INFO), fmt)
        settings = settings_mod.Settings.from_env().with_args(args)
        tracing = tracing_from_env()
    except ValueError as problem:  # a setting, the log format or an OTEL_* variable (TracingSettingError)
        print(f"nodeflow worker: {problem}", file=sys.stderr)
        return 2
    try:
        return _serve(settings, tracing)
    finally:
        if tracing is not None:
            tracing.shutdown()  # export the spans still buffered


def _serve(settings: settings_mod.Settings, tracing: Tracing | None) -> int:

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run_worker(settings, stop, tracing)

    try:
        asyncio.run(main())
    # the connection, the namespace or its owner, a metrics port taken: one line, no traceback
    except (TemporalSettingError, MetricsPortError) as problem:
        print(f"nodeflow worker: {problem}", file=sys.stderr)
        return 1
    return 0
