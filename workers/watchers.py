"""Kubernetes watchers in the worker process: they turn cluster events into Temporal signals.

- PodWatcher: pending, unschedulable pods -> one `pods_pending` signal to the provisioner per
  FLUSH_SECONDS with events, carrying how many distinct pods were seen (the provisioner's solver reads
  the pods itself, so the signal carries nothing more into the workflow's history). Each watch ends
  after WATCH_SECONDS and restarts from a fresh list, which re-signals pods still pending: that periodic
  nudge is what retries provisioning after a failed launch.
- DeletionWatcher: a NodeClaim or a Node (holding our finalizer) being deleted -> `delete` signal to
  the claim's workflow.
- DriftTrigger: a NodePool's or EC2NodeClass's spec changed (its generation rose) -> `check_drift`
  signal to each of its claims' workflows (at most SIGNALS_PER_SECOND), so drift is marked within
  seconds rather than at the next periodic check.

Watchers run in threads (the Kubernetes client is synchronous) and hand signals to the event loop.
Errors are logged and the watch restarts after a short pause: the worker keeps running.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from apis import labels
from kube import resources as r
from kube.types import Kube, Obj
from scheduling.provisionable import is_provisionable, pod_key
from workers.starter import TemporalStarter

log = logging.getLogger(__name__)
WATCH_SECONDS = 15
FLUSH_SECONDS = 0.2
RETRY_PAUSE_SECONDS = 1.0
SIGNALS_PER_SECOND = 100.0


class _Watcher:
    def __init__(self, kube: Kube, starter: TemporalStarter, loop: asyncio.AbstractEventLoop) -> None:
        self.kube = kube
        self.starter = starter
        self.loop = loop

    def _call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def _watch_forever(self, resource: r.Resource, handle: Callable[[str, Obj], None], stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                for event_type, obj in self.kube.watch(resource, timeout_seconds=WATCH_SECONDS):
                    if stop.is_set():
                        return
                    if event_type in ("ADDED", "MODIFIED", "DELETED"):
                        handle(event_type, obj)
            except Exception:
                log.exception("watch of %s failed; restarting", resource.plural)
                stop.wait(RETRY_PAUSE_SECONDS)


class PodWatcher(_Watcher):
    def __init__(self, kube: Kube, starter: TemporalStarter, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(kube, starter, loop)
        self._keys: set[str] = set()
        self._lock = threading.Lock()

    def run(self, stop: threading.Event) -> None:
        flusher = threading.Thread(target=self._flush_forever, args=(stop,), name="pod-signal-flusher", daemon=True)
        flusher.start()
        self._watch_forever(r.POD, self._on_event, stop)
        flusher.join(timeout=5)

    def _on_event(self, event_type: str, pod: Obj) -> None:
        if event_type in ("ADDED", "MODIFIED") and is_provisionable(pod):
            with self._lock:
                self._keys.add(pod_key(pod))

    def _flush_forever(self, stop: threading.Event) -> None:
        while not stop.wait(FLUSH_SECONDS):
            with self._lock:
                seen, self._keys = len(self._keys), set()
            if not seen:
                continue
            try:
                self._call(self.starter.signal_provisioner(seen))
            except Exception:
                log.exception("signalling the provisioner failed; the next watch cycle retries")


class DeletionWatcher(_Watcher):
    def __init__(self, kube: Kube, starter: TemporalStarter, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(kube, starter, loop)
        self._signalled: set[str] = set()

    def run(self, stop: threading.Event) -> None:
        nodes = threading.Thread(
            target=self._watch_forever, args=(r.NODE, self._on_node, stop), name="node-deletion-watch", daemon=True
        )
        nodes.start()
        self._watch_forever(r.NODECLAIM, self._on_claim, stop)
        nodes.join(timeout=5)

    def _on_claim(self, event_type: str, claim: Obj) -> None:
        name = claim["metadata"]["name"]
        if event_type == "DELETED":
            self._signalled.discard(name)
        elif claim["metadata"].get("deletionTimestamp"):
            self._signal(name, "NodeClaim deleted")

    def _on_node(self, event_type: str, node: Obj) -> None:
        meta = node["metadata"]
        if event_type == "DELETED" or not meta.get("deletionTimestamp"):
            return
        if labels.TERMINATION_FINALIZER not in (meta.get("finalizers") or []):
            return
        provider_id = node.get("spec", {}).get("providerID")
        for claim in self.kube.list(r.NODECLAIM):
            status = claim.get("status", {})
            if status.get("nodeName") == meta["name"] or (provider_id and status.get("providerID") == provider_id):
                self._signal(claim["metadata"]["name"], f"Node {meta['name']} deleted")

    def _signal(self, name: str, reason: str) -> None:
        if name in self._signalled:
            return
        try:
            if self._call(self.starter.signal_node_claim(name, "delete", reason)):
                self._signalled.add(name)
        except Exception:
            log.exception("signalling nodeclaim-%s failed; the workflow's own liveness check catches up", name)


class DriftTrigger(_Watcher):
    """Signals `check_drift` to the claims of a NodePool or EC2NodeClass whose spec changed. The first
    sight of an object (the worker starting) only records its generation; a change seen later, also across
    watch restarts, signals. Signals are paced (`signals_per_second`) so a change of a pool of thousands of
    nodes does not burst thousands of checks at once; a missed signal is caught by the periodic check."""

    def __init__(
        self,
        kube: Kube,
        starter: TemporalStarter,
        loop: asyncio.AbstractEventLoop,
        signals_per_second: float = SIGNALS_PER_SECOND,
    ) -> None:
        super().__init__(kube, starter, loop)
        self.pause = 1.0 / signals_per_second
        self._generations: dict[tuple[str, str], int] = {}
        self._stop = threading.Event()

    def run(self, stop: threading.Event) -> None:
        self._stop = stop
        classes = threading.Thread(
            target=self._watch_forever,
            args=(r.EC2NODECLASS, self._on_node_class, stop),
            name="nodeclass-drift-watch",
            daemon=True,
        )
        classes.start()
        self._watch_forever(r.NODEPOOL, self._on_node_pool, stop)
        classes.join(timeout=5)

    def _changed(self, resource: r.Resource, event_type: str, obj: Obj) -> bool:
        """The object's spec changed since it was last seen (never on first sight or deletion)."""
        key = (resource.plural, obj["metadata"]["name"])
        if event_type == "DELETED":
            self._generations.pop(key, None)
            return False
        generation = int(obj["metadata"].get("generation", 0))
        previous = self._generations.get(key)
        self._generations[key] = generation
        return previous is not None and generation > previous

    def _on_node_pool(self, event_type: str, pool: Obj) -> None:
        if self._changed(r.NODEPOOL, event_type, pool):
            name = pool["metadata"]["name"]
            claims = self.kube.list(r.NODECLAIM, label_selector=f"{labels.NODEPOOL}={name}")
            self._signal_all([c["metadata"]["name"] for c in claims], f"NodePool {name} changed")

    def _on_node_class(self, event_type: str, node_class: Obj) -> None:
        if self._changed(r.EC2NODECLASS, event_type, node_class):
            name = node_class["metadata"]["name"]
            claims = [
                c["metadata"]["name"]
                for c in self.kube.list(r.NODECLAIM)
                if ((c.get("spec") or {}).get("nodeClassRef") or {}).get("name") == name
            ]
            self._signal_all(claims, f"EC2NodeClass {name} changed")

    def _signal_all(self, names: list[str], reason: str) -> None:
        log.info("%s: checking drift of %d NodeClaims", reason, len(names))
        for name in names:
            if self._stop.is_set():
                return
            try:
                self._call(self.starter.signal_node_claim(name, "check_drift", reason))
            except Exception:  # Temporal unreachable: do not wait out a timeout per claim
                log.exception("signalling nodeclaim-%s failed; the rest wait for their periodic check", name)
                return
            self._stop.wait(self.pause)


class Resync:
    """Asks the provisioner for a round every `interval` seconds even when no pod is pending, so NodePool
    and EC2NodeClass status (validation, what selectors resolve to) follows changes that no pod event
    announces."""

    def __init__(self, starter: TemporalStarter, loop: asyncio.AbstractEventLoop, interval: float = 60.0) -> None:
        self.starter = starter
        self.loop = loop
        self.interval = interval

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            try:
                asyncio.run_coroutine_threadsafe(self.starter.signal_provisioner(), self.loop).result(timeout=30)
            except Exception:
                log.exception("resync signal to the provisioner failed; retrying next interval")
