"""Waking the dev stack's reconcile loops (the pod binder, the simulated kubelet) on change instead of
polling on a fixed clock.

`ChangeFeed` watches a few resources, one daemon thread each, and records which of them changed (and,
with `cache`, keeps the objects the watches deliver, so a pass reads them without a LIST);
`run_passes` runs a loop's passes: at once when something changed, every `poll_interval` while the last
pass reported it is busy (it made progress or waits on a timer), and otherwise once per `backstop`
seconds, which covers anything a watch cannot see (EC2, a missed event). A pass never starts sooner than
`poll_interval` after the previous one ended, so a burst of events costs no more passes than the former
fixed poll did, and an event after a quiet spell is acted on at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kube.client import GoneError
from kube.errors import NotFoundError
from kube.resources import Resource
from kube.types import Kube, Obj

log = logging.getLogger(__name__)

WATCH_SECONDS = 30
RETRY_PAUSE_SECONDS = 1.0

Changes = frozenset[Resource] | None
"""What a pass is told: the resources that changed since the last pass, or None for "anything may have
changed" (the first pass, and each backstop pass)."""


class ChangeFeed:
    """Watches `resources` and records which changed; `wake` is set on every change and when `stop` is set.

    Each watch resumes from the last resourceVersion it saw, so a restart replays nothing; a watch that
    starts over (first start, 410 Gone, after an error) counts as a change of its resource, since events
    may have been missed. BOOKMARKs are not changes. Watch threads are daemons; after `stop` each ends at
    its next event, the end of its watch (`watch_seconds`), or when the connection drops, whichever is
    first: nothing waits for them.

    With `cache`, it is also an informer: a watch that starts over first LISTs its resource (replacing
    what was kept) and then watches from the newest resourceVersion among the listed objects; the events
    it replays from there are ones the list may already show, and applying them again in order leaves
    the same objects (the emulator's resourceVersions count up, as etcd revisions do). `objects` reads
    what is kept. A watch event older than what is kept of an object is ignored, so a loop may `remember`
    what its own write returned (or assumes, like a binding) without a late event undoing it.
    """

    def __init__(
        self,
        kube: Kube,
        resources: Sequence[Resource],
        *,
        name: str,
        watch_seconds: int = WATCH_SECONDS,
        retry_pause: float = RETRY_PAUSE_SECONDS,
        cache: bool = False,
    ) -> None:
        self.wake = threading.Event()
        self._kube = kube
        self._resources = tuple(resources)
        self._name = name
        self._watch_seconds = watch_seconds
        self._retry_pause = retry_pause
        self._lock = threading.Lock()
        self._changed: set[Resource] = set()
        self._cache = cache
        # resource -> (namespace, name) -> the object as last seen; a resource is here once listed.
        self._objects: dict[Resource, dict[tuple[str, str], Obj]] = {}

    def start(self, stop: threading.Event) -> None:
        """Start one watch thread per resource, and one that sets `wake` when `stop` is set."""
        for resource in self._resources:
            threading.Thread(
                target=self._watch_forever, args=(resource, stop), name=f"{self._name}-watch-{resource.plural}",
                daemon=True,
            ).start()  # fmt: skip
        threading.Thread(target=self._relay_stop, args=(stop,), name=f"{self._name}-stop", daemon=True).start()

    def take(self) -> frozenset[Resource]:
        """The resources changed since the last `take` (clearing them, and `wake`)."""
        with self._lock:
            self.wake.clear()
            changed, self._changed = frozenset(self._changed), set()
        return changed

    def objects(self, resource: Resource) -> list[Obj] | None:
        """With `cache`: the objects of `resource` as last seen, sorted by (namespace, name), each a copy of
        its top level (replace nested values rather than change them); None until it was listed once."""
        with self._lock:
            kept = self._objects.get(resource)
            if kept is None:
                return None
            return [dict(kept[key]) for key in sorted(kept)]

    def remember(self, resource: Resource, obj: Obj) -> None:
        """With `cache`: keep `obj` (what a write returned, or what the caller assumes it made) until a
        newer event of it arrives. Without `cache`, or before the first listing, nothing is kept."""
        with self._lock:
            kept = self._objects.get(resource)
            if kept is not None:
                kept[_key(obj)] = obj

    def forget(self, resource: Resource, obj: Obj) -> None:
        """With `cache`: drop `obj` (the caller deleted it) until an event says otherwise."""
        with self._lock:
            kept = self._objects.get(resource)
            if kept is not None:
                kept.pop(_key(obj), None)

    def _relist(self, resource: Resource) -> str | None:
        """Replace what is kept of `resource` with a LIST; the resourceVersion to watch from (None when
        nothing is listed: a watch without one starts with every object that exists)."""
        items = self._kube.list(resource)
        with self._lock:
            self._objects[resource] = {_key(obj): obj for obj in items}
        versions = [_version(obj) for obj in items]
        newest = max(versions, default=-1)
        return str(newest) if newest >= 0 else None

    def _apply(self, resource: Resource, event_type: str, obj: Obj) -> None:
        with self._lock:
            kept = self._objects.get(resource)
            if kept is None:
                return
            key, version = _key(obj), _version(obj)
            known = kept.get(key)
            known_version = _version(known) if known is not None else None
            if known_version is not None and version < known_version:
                return  # older than what is kept (e.g. what a write returned)
            if event_type == "DELETED":
                kept.pop(key, None)
            elif known_version is None or version > known_version or version < 0:
                kept[key] = obj

    def _mark(self, resource: Resource) -> None:
        with self._lock:
            self._changed.add(resource)
            self.wake.set()

    def _relay_stop(self, stop: threading.Event) -> None:
        stop.wait()
        self.wake.set()

    def _watch_forever(self, resource: Resource, stop: threading.Event) -> None:
        version: str | None = None
        relist = self._cache
        while not stop.is_set():
            try:
                if relist:
                    version, relist = self._relist(resource), False
                    self._mark(resource)
                for event_type, obj in self._kube.watch(
                    resource, resource_version=version, timeout_seconds=self._watch_seconds
                ):
                    if stop.is_set():
                        return
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or "") or version
                    if event_type != "BOOKMARK":
                        if self._cache:
                            self._apply(resource, event_type, obj)
                        self._mark(resource)
            except GoneError:
                version = None  # the next watch lists everything afresh (synthetic ADDED events)
                relist = self._cache
                self._mark(resource)
            except Exception as exc:  # the watch must outlive any failure; the loop's backstop covers the gap
                if stop.is_set():
                    return
                level = logging.INFO if isinstance(exc, NotFoundError) else logging.WARNING  # e.g. CRD not yet there
                log.log(level, "%s: watch of %s failed, restarting: %s", self._name, resource.plural, exc)
                relist = relist or (self._cache and version is None)
                self._mark(resource)
                stop.wait(self._retry_pause)


def read_objects(kube: Kube, feed: ChangeFeed | None, resource: Resource) -> list[Obj]:
    """The objects of `resource` as `feed` keeps them (see ChangeFeed's `cache`), else from a LIST: without
    a feed (a loop's pass called on its own), or before its first listing. Raises KubeError."""
    kept = feed.objects(resource) if feed is not None else None
    return kept if kept is not None else kube.list(resource)


def keep(feed: ChangeFeed | None, resource: Resource, obj: Obj) -> Obj:
    """`obj` (what a loop's write returned, or what it assumes it made) remembered by `feed` for the next
    pass's reads (ChangeFeed.remember); returns it. Without a feed (a pass called on its own), nothing
    is kept."""
    if feed is not None:
        feed.remember(resource, obj)
    return obj


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _version(obj: Mapping[str, Any]) -> int:
    """The object's resourceVersion as a number (-1 when it has none a number can be read from)."""
    raw = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return int(raw) if raw.isdigit() else -1


def run_passes(
    one_pass: Callable[[Changes], bool],
    feed: ChangeFeed,
    stop: threading.Event,
    *,
    poll_interval: float,
    backstop: float,
    name: str,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Run `one_pass` until `stop` is set (see the module docstring); starts `feed` first.

    `one_pass(changes)` returns True when it is busy: it made progress or failed (so another pass soon
    may find more to do), or something waits on a timer. An exception from it is logged and counts as
    busy. Returns within about one pass of `stop` being set.
    """
    feed.start(stop)
    changes: Changes = None
    while not stop.is_set():
        try:
            busy = one_pass(changes)
        except Exception:  # the loop must outlive any single bad pass
            log.exception("%s: pass failed", name)
            busy = True
        ended = clock()
        if not busy and not feed.wake.wait(backstop):
            changes = None  # the backstop: a full pass
            feed.take()
            continue
        # Busy, or woken by a change: no sooner than poll_interval after the last pass.
        if stop.wait(max(0.0, ended + poll_interval - clock())):
            return
        changes = feed.take()
