"""Validated reads of the few, rarely changing objects every drift check needs (a NodePool, an
EC2NodeClass), shared by the worker's activity threads for a few seconds.

A running check of each node reads its NodePool and EC2NodeClass; at 10,000 nodes checked every 5
minutes that is over 60 GETs a second of the same handful of objects. Shared for `ttl` seconds, it is at
most one GET per object per `ttl`, and a change reaches drift checks that much later. Only readers that
tolerate that staleness use it; whatever writes reads fresh.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from kube import resources as r
from kube.errors import NotFoundError
from kube.types import Kube

SHARED_READ_TTL_SECONDS = 10.0

M = TypeVar("M", bound=BaseModel)


class SharedReads:
    """`get(model, resource, name)`: the object validated as `model`, or None when it does not exist or does
    not validate (both remembered for `ttl` seconds too). Other API errors are raised and not remembered."""

    def __init__(self, kube: Kube, ttl: float = SHARED_READ_TTL_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.kube = kube
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], tuple[float, BaseModel | None]] = {}

    def get(self, model: type[M], resource: r.Resource, name: str, fresh: bool = False) -> M | None:
        """`fresh`: read from the API whatever is remembered (and remember that)."""
        key = (resource.plural, name)
        now = self.clock()
        with self._lock:
            entry = self._entries.get(key)
        if (
            not fresh
            and entry is not None
            and now - entry[0] < self.ttl
            and (entry[1] is None or isinstance(entry[1], model))
        ):
            return entry[1]  # type: ignore[return-value]
        value: M | None
        try:
            value = model.model_validate(self.kube.get(resource, name))
        except (NotFoundError, ValidationError):
            value = None
        with self._lock:
            self._entries[key] = (now, value)
        return value
