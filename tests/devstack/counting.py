"""A Kube client wrapper that counts list calls, for tests of how much an idle loop polls."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from kube.resources import Resource
from kube.types import Obj


class CountingKube:
    """Delegates everything to `inner`, counting `list` calls per resource plural (thread-safe)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.lists: Counter[str] = Counter()

    def list(self, resource: Resource, *args: Any, **kwargs: Any) -> list[Obj]:
        with self._lock:
            self.lists[resource.plural] += 1
        result: list[Obj] = self._inner.list(resource, *args, **kwargs)
        return result

    def total(self) -> int:
        with self._lock:
            return sum(self.lists.values())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
