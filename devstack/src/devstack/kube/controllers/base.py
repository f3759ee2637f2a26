"""The shape every in-process controller shares: events in, keys queued, ``reconcile(key)`` out.

Controllers run as tasks on the server's event loop (like kube-controller-manager's loops, but
in-process). Store listeners are synchronous, so ``on_event`` only queues keys; ``run`` drains the
queue and calls ``reconcile``, which reads and writes the store directly (each write is atomic on
the loop). Reconcile must be idempotent: writes that change nothing produce no events, which is
what lets a controller settle. A failed reconcile is retried after ``retry_delay`` seconds,
doubling per consecutive failure of that key up to ``max_retry_delay``.
After a wake-up the loop waits ``batch_delay`` seconds so a burst of events for one key (1,000
pod status updates of one ReplicaSet) costs one reconcile, like a client-go workqueue.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

from devstack.kube.catalog import ServedResource
from devstack.kube.errors import ApiError
from devstack.kube.store import ObjectStore, WatchEvent

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
NsName = tuple[str, str]  # (namespace, name) of a namespaced object


class Controller(abc.ABC, Generic[K]):
    """Base class: subclasses say which keys an event touches and how to reconcile one key."""

    name = "controller"
    retry_delay = 0.2
    max_retry_delay = 10.0
    batch_delay = 0.05

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._pending: dict[K, None] = {}  # an ordered set: keys run in the order they came
        self._wake = asyncio.Event()
        self._failures: dict[K, int] = {}

    @abc.abstractmethod
    def keys_for(self, res: ServedResource, event: WatchEvent) -> Iterable[K]:
        """The keys whose reconcile an event may change; must be cheap and must not write."""

    @abc.abstractmethod
    def reconcile(self, key: K) -> None:
        """Bring the world in line for one key; may raise ApiError (retried later)."""

    def on_event(self, res: ServedResource, event: WatchEvent) -> None:
        for key in self.keys_for(res, event):
            self.enqueue(key)

    def enqueue(self, key: K) -> None:
        self._pending[key] = None
        self._wake.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.batch_delay)
            self._wake.clear()
            while self._pending:
                key = next(iter(self._pending))
                del self._pending[key]
                try:
                    self.reconcile(key)
                    self._failures.pop(key, None)
                except ApiError as exc:
                    log.debug("%s: reconcile of %r failed (%s); retrying", self.name, key, exc.message)
                    loop.call_later(self._backoff(key), self.enqueue, key)
                except Exception:
                    log.exception("%s: reconcile of %r crashed; retrying", self.name, key)
                    loop.call_later(self._backoff(key), self.enqueue, key)
                await asyncio.sleep(0)  # let requests in between keys

    def _backoff(self, key: K) -> float:
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        return float(min(self.max_retry_delay, self.retry_delay * 2 ** (failures - 1)))
