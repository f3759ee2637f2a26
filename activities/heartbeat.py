"""Heartbeats from a helper thread while a synchronous activity runs.

A sync activity blocked in one long call (CreateFleet, an eviction round) cannot heartbeat itself. Beating
from a thread that shares the activity's context lets the workflow set a short heartbeat timeout, so a
worker killed mid-activity is noticed within seconds and the activity retried elsewhere, instead of after
its whole start-to-close timeout. Retries are safe because every activity is idempotent.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from temporalio import activity

INTERVAL_SECONDS = 2.0


@contextmanager
def heartbeating(interval: float = INTERVAL_SECONDS) -> Iterator[None]:
    """Heartbeat every `interval` seconds until the block ends."""
    stop = threading.Event()
    context = contextvars.copy_context()

    def beat() -> None:
        while not stop.wait(interval):
            context.run(activity.heartbeat)

    thread = threading.Thread(target=beat, name="activity-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
