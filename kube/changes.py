"""`Changes`: a count of watch events, shared by reflectors (kube.reflector) and read by whoever needs to
know whether anything changed since it last looked. No I/O; importable from any layer."""

from __future__ import annotations

import threading


class Changes:
    """How many events the reflectors sharing it have handed over (listed objects included): a reader
    that saw the same count twice knows none of their resources changed in between, as far as their
    watches tell. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def bump(self) -> None:
        with self._lock:
            self._count += 1

    @property
    def count(self) -> int:
        with self._lock:
            return self._count
