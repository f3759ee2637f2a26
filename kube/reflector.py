"""`Reflector`: one resource's list-then-watch, kept up until stopped, as client-go's reflector runs it
under every Kubernetes informer (and so under every Karpenter controller).

It LISTs once, then WATCHes from the list's resourceVersion. When the server ends a watch (its timeout),
the next one resumes from the last resourceVersion seen, an event's or a BOOKMARK's, so the server sends
each change once and no object again. Only a 410 Gone (the version is older than the server keeps) or a
failed call makes it LIST again. That is the difference from watching without a resourceVersion: such a
watch starts by sending every object, so a cluster of N pods costs a full pod list per watch, for the
API server to encode and the worker to parse.

A relist hands over what a watch would have: every listed object as ADDED, and a DELETED for each object
it held before that the list no longer holds (deleted while no watch was open), so consumers see every
deletion. The DELETED event's object is what `remember` kept of the object when last seen (by default its
metadata name, namespace and uid): keep what a consumer reads from a deleted object. After each LIST,
`synced` is called: every object that exists has been handed over. `changes`, when given, counts every
event handed over. `store`, when given (kube.watch_cache), is kept with every event before the consumer
sees it, and marked synced after each LIST.

Not thread-safe: one thread calls `run`. `handle` runs on that thread; an exception from it is logged
with the object's name and the reflector goes on with the next event (one object a consumer cannot
handle does not stop the others). I/O only through the `Kube` it is given."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kube import resources as r
from kube.changes import Changes
from kube.client import GoneError
from kube.types import Kube, Obj
from kube.watch_cache import Store

log = logging.getLogger(__name__)
WATCH_SECONDS = 60
RETRY_PAUSE_SECONDS = 1.0

Handler = Callable[[str, Obj], None]


def identity(obj: Obj) -> Obj:
    """What a Reflector keeps of an object by default: metadata name, namespace and uid."""
    meta = obj.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "uid") if k in meta}}


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Reflector:
    """See the module docstring. `watch_seconds`: how long each watch asks the server to stay open (a
    stopped reflector notices at the next event or at that timeout)."""

    def __init__(
        self,
        kube: Kube,
        resource: r.Resource,
        handle: Handler,
        synced: Callable[[], None] | None = None,
        remember: Callable[[Obj], Obj] = identity,
        watch_seconds: int = WATCH_SECONDS,
        retry_pause: float = RETRY_PAUSE_SECONDS,
        changes: Changes | None = None,
        store: Store | None = None,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.handle = handle
        self.synced = synced
        self.remember = remember
        self.watch_seconds = watch_seconds
        self.retry_pause = retry_pause
        self.changes = changes  # bumped before each event is handed over
        self.store = store  # kept with each event before it is handed over
        self.lists = 0  # LISTs made: the first, then one per Gone or failure
        self._known: dict[str, Obj] = {}  # object key -> what `remember` kept of it

    def run(self, stop: threading.Event) -> None:
        """List and watch until `stop` is set; no event is handed over after it is."""
        version = ""
        while not stop.is_set():
            try:
                if not version:
                    version = self._relist(stop)
                version = self._watch(version, stop)
            except GoneError:
                log.info("watch of %s: version %s is gone; listing again", self.resource.plural, version)
                version = ""
            except Exception:
                log.exception("watch of %s failed; listing again", self.resource.plural)
                version = ""
                stop.wait(self.retry_pause)

    def _relist(self, stop: threading.Event) -> str:
        """LIST; hand over every object as ADDED and every known one the list lacks as DELETED. Returns the
        list's resourceVersion ('' when stopped on the way)."""
        items, version = self.kube.list_with_version(self.resource)
        self.lists += 1
        listed = {object_key(obj) for obj in items}
        for key in [key for key in self._known if key not in listed]:
            if stop.is_set():
                return ""
            self._hand_over("DELETED", self._known.pop(key))
        for obj in items:
            if stop.is_set():
                return ""
            self._known[object_key(obj)] = self.remember(obj)
            self._hand_over("ADDED", obj)
        if self.store is not None:
            self.store.mark_synced()
        if self.synced is not None:
            self.synced()
        return version

    def _watch(self, version: str, stop: threading.Event) -> str:
        """One watch from `version`; returns the last version seen when the server ends it."""
        for event_type, obj in self.kube.watch(
            self.resource, resource_version=version, timeout_seconds=self.watch_seconds
        ):
            if stop.is_set():
                return version
            version = _version(obj) or version
            if event_type == "DELETED":
                self._known.pop(object_key(obj), None)
            elif event_type in ("ADDED", "MODIFIED"):
                self._known[object_key(obj)] = self.remember(obj)
            else:
                continue  # BOOKMARK: only its version counts
            self._hand_over(event_type, obj)
        return version

    def _hand_over(self, event_type: str, obj: Obj) -> None:
        if self.store is not None:
            self.store.apply(event_type, obj)
        if self.changes is not None:
            self.changes.bump()
        try:
            self.handle(event_type, obj)
        except Exception:
            log.exception("%s event of %s %s not handled; going on", event_type, self.resource.kind, object_key(obj))
