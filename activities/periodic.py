"""A leader's loop that runs one step every interval: the claim sweep and the garbage survey."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable


def every(interval: float, stop: threading.Event, step: Callable[[], object], log: logging.Logger, what: str) -> None:
    """Run `step` every `interval` seconds, the first one interval from now, until `stop` is set. A step
    that raises is logged on `log` ("<what> failed") and the next comes on time. Never raises."""
    while not stop.wait(interval):
        try:
            step()
        except Exception:
            log.exception("%s failed; retrying at the next one", what)


__all__ = ["every"]
