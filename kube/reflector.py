"""`Reflector`: one resource's list-then-watch, kept up until stopped, as client-go's reflector runs it
under every Kubernetes informer (and so under every Karpenter controller).

It LISTs once, then WATCHes from the list's resourceVersion. When the server ends a watch (its timeout),
the next one resumes from the last resourceVersion seen, an event's or a BOOKMARK's, so the server sends
each change once and no object again. Only a 410 Gone (the version is older than the server keeps) or a
failed call makes it LIST again. That is the difference from watching without a resourceVersion: such a
watch starts by sending every object, so a cluster of N pods costs a full pod list per watch, for the
API server to encode and the worker to parse.

Every event is kept in a `kube.watch_cache.Store` before the consumer sees it: the `store` given (the
leader's watch cache), else one of the reflector's own. A relist hands over what a watch would have: every
listed object as ADDED, and a DELETED for each object the store holds that the list no longer does
(deleted while no watch was open), carrying the object as last seen, so consumers see every deletion.
After each LIST the store is marked synced and `synced` is called: every object that exists has been
handed over.

A LIST or WATCH the API server refuses (401 or 403: the ServiceAccount lacks the verb) is not retried
every second with a stack trace: as client-go's reflector backs off, the reflector logs one line naming
the refusal (the server's message names the user, verb, resource and scope, e.g. `nodes is forbidden:
User "system:serviceaccount:nodeflow:nodeflow" cannot watch resource "nodes" in API group "" at the
cluster scope`) and tries again after a pause that doubles from `retry_pause` up to
`MAX_FORBIDDEN_PAUSE_SECONDS`; a watch that ends normally resets the pause.

Not thread-safe: one thread calls `run`. `handle` runs on that thread; an exception from it is logged
with the object's name and the reflector goes on with the next event (one object a consumer cannot
handle does not stop the others). I/O only through the `Kube` it is given."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kube import resources as r
from kube.client import GoneError
from kube.errors import ForbiddenError
from kube.types import Kube, Obj
from kube.watch_cache import Store, object_key

log = logging.getLogger(__name__)
WATCH_SECONDS = 60
RETRY_PAUSE_SECONDS = 1.0
MAX_FORBIDDEN_PAUSE_SECONDS = 60.0

Handler = Callable[[str, Obj], None]


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
        watch_seconds: int = WATCH_SECONDS,
        retry_pause: float = RETRY_PAUSE_SECONDS,
        store: Store | None = None,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.handle = handle
        self.synced = synced
        self.watch_seconds = watch_seconds
        self.retry_pause = retry_pause
        self.store = store if store is not None else Store(resource)  # kept before each event is handed over
        self.lists = 0  # LISTs made: the first, then one per Gone or failure
        self.refusals = 0  # LISTs or WATCHes refused (401/403) in a row

    def run(self, stop: threading.Event) -> None:
        """List and watch until `stop` is set; no event is handed over after it is."""
        version = ""
        while not stop.is_set():
            try:
                if not version:
                    version = self._relist(stop)
                version = self._watch(version, stop)
                self.refusals = 0
            except ForbiddenError as exc:
                pause = self.forbidden_pause()
                self.refusals += 1
                log.error(
                    "list/watch of %s refused by the API server, retrying in %.0f s (grant the verb to the "
                    "worker's ServiceAccount): %s",
                    self.resource.plural, pause, exc,
                )  # fmt: skip
                version = ""
                stop.wait(pause)
            except GoneError:
                log.info("watch of %s: version %s is gone; listing again", self.resource.plural, version)
                version = ""
            except Exception:
                log.exception("watch of %s failed; listing again", self.resource.plural)
                version = ""
                stop.wait(self.retry_pause)

    def forbidden_pause(self) -> float:
        """The pause before retrying after `refusals` refusals in a row: `retry_pause` doubled each time,
        at most MAX_FORBIDDEN_PAUSE_SECONDS."""
        return float(min(self.retry_pause * 2 ** min(self.refusals, 16), MAX_FORBIDDEN_PAUSE_SECONDS))

    def _relist(self, stop: threading.Event) -> str:
        """LIST; hand over every object as ADDED and every stored one the list lacks as DELETED. Returns
        the list's resourceVersion ('' when stopped on the way)."""
        items, version = self.kube.list_with_version(self.resource)
        self.lists += 1
        for gone in self.store.missing_from({object_key(obj) for obj in items}):
            if stop.is_set():
                return ""
            self._hand_over("DELETED", gone)
        for obj in items:
            if stop.is_set():
                return ""
            self._hand_over("ADDED", obj)
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
            if event_type in ("ADDED", "MODIFIED", "DELETED"):  # not a BOOKMARK: only its version counts
                self._hand_over(event_type, obj)
        return version

    def _hand_over(self, event_type: str, obj: Obj) -> None:
        self.store.apply(event_type, obj)
        try:
            self.handle(event_type, obj)
        except Exception:
            log.exception("%s event of %s %s not handled; going on", event_type, self.resource.kind, object_key(obj))
