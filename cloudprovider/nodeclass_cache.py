"""`NodeClassCache`: a value derived from each EC2NodeClass by a cloud lookup, remembered per node class
version for a while. Pure (no I/O of its own); the lookup is the caller's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from apis.ec2nodeclass import EC2NodeClass

T = TypeVar("T")

# How long a lookup is reused: Karpenter's subnet, security group and AMI providers cache for a minute too.
RESOLVED_TTL_SECONDS = 60.0


class NodeClassCache(Generic[T]):
    """`load(node_class)` cached per (name, resourceVersion) for `ttl` seconds and shared by the worker's
    threads, so many nodes' checks or launches cost one lookup per node class. A changed node class (a new
    resourceVersion: its spec, or its status as the node class controller wrote it) is looked up afresh.
    A node class without a resourceVersion (built in memory, not read from the API) has no version to tell
    its changes by, so it is looked up every time. Only values are cached: a lookup that raises is retried
    by the next `get`. Two threads that miss at once may both load; the later value is kept."""

    def __init__(
        self,
        load: Callable[[EC2NodeClass], T],
        ttl: float = RESOLVED_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.load = load
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[str, float, T]] = {}

    def get(self, node_class: EC2NodeClass) -> T:
        version = node_class.metadata.resource_version or ""
        if not version:
            return self.load(node_class)
        now = self.clock()
        with self._lock:
            entry = self._entries.get(node_class.name)
            if entry is not None and entry[0] == version and now - entry[1] < self.ttl:
                return entry[2]
        value = self.load(node_class)
        with self._lock:
            self._entries[node_class.name] = (version, now, value)
        return value
