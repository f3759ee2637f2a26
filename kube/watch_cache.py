"""`WatchCache`: the full objects of the resources the leader watches, as their reflectors last saw them,
so that whatever reads the whole cluster over and over (the cluster-state metrics every 10 s, the status
refresh every minute) reads memory instead of LISTing the API server, as Karpenter's controllers read
their informers' caches.

Each resource has a `Store` that its reflector (kube.reflector) keeps: every object it hands over is put
in or, when DELETED, taken out, before any consumer sees the event. A store is `synced` once its
reflector's first LIST was handed over; from then on it holds every object the watch has shown, as
fresh as the watch (a relist after a failure updates it in place and removes what was deleted
meanwhile). Objects are kept without `metadata.managedFields` (Karpenter's caches drop them too): the
field-manager bookkeeping is often the largest part of an object and nothing here reads it. They are
also kept compact: every key, and every string value of up to SHARED_STRING_CHARS characters, is
interned, so the thousands of pods of a cluster share one copy of "metadata", "Running" or
"node.kubernetes.io/not-ready" instead of each holding its own (a JSON decoder shares keys only within
one document). A typical Deployment pod decoded from 3.5 KB of JSON takes about 20 KiB as plain dicts
and 10 KiB kept so.

Readers get the stored objects themselves, not copies (as client-go's listers do): they must not
change them. `WatchCache.changes` counts the events the stores took: a reader that sees the same count
twice knows the watched resources did not change in between, as far as the watches tell. Thread-safe;
no I/O."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from typing import Any

from kube import resources as r
from kube.types import Kube, Obj

# What the leader watches and its cache holds (workers.watchers runs the watches).
WATCHED = (r.POD, r.NODE, r.NODECLAIM, r.NODEPOOL, r.EC2NODECLASS)
SHARED_STRING_CHARS = 64  # longer strings (a container image digest, an annotation) are rarely repeated


class NotSyncedError(RuntimeError):
    """The store has not been filled by its first LIST yet (or its watch is not running)."""


def object_key(obj: Obj) -> str:
    """An object's namespace/name ('/name' when cluster-scoped): how stores and reflectors tell objects
    apart."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _compact(value: Any) -> Any:
    """A copy of a decoded JSON value with its keys and short strings interned."""
    if isinstance(value, dict):
        return {sys.intern(k): _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    if isinstance(value, str) and len(value) <= SHARED_STRING_CHARS:
        return sys.intern(value)
    return value


def _kept(obj: Obj) -> Obj:
    """What a store keeps of `obj`: a compact copy without metadata.managedFields."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    kept: Obj = _compact(obj)
    return kept


class Store:
    """One resource's objects by namespace/name; see the module docstring."""

    def __init__(self, resource: r.Resource) -> None:
        self.resource = resource
        self._lock = threading.Lock()
        self._objects: dict[str, Obj] = {}
        self._synced = False
        self._changes = 0

    def apply(self, event_type: str, obj: Obj) -> None:
        """One event as a reflector hands it over: ADDED or MODIFIED puts `obj`, DELETED removes it, and
        either counts in `changes` once the store shows it; any other type (BOOKMARK) changes nothing."""
        key = object_key(obj)
        if event_type == "DELETED":
            with self._lock:
                self._objects.pop(key, None)
                self._changes += 1
        elif event_type in ("ADDED", "MODIFIED"):
            kept = _kept(obj)  # outside the lock: readers need not wait for the copy
            with self._lock:
                self._objects[key] = kept
                self._changes += 1

    @property
    def changes(self) -> int:
        """How many events the store has taken (a relist's included); it never goes down."""
        with self._lock:
            return self._changes

    def missing_from(self, keys: set[str]) -> list[Obj]:
        """The objects held whose object_key is not in `keys` (what a relist no longer shows), whether or
        not the store is synced yet."""
        with self._lock:
            return [obj for key, obj in self._objects.items() if key not in keys]

    def mark_synced(self) -> None:
        """The reflector's LIST has been handed over: the store holds every object."""
        with self._lock:
            self._synced = True

    @property
    def synced(self) -> bool:
        with self._lock:
            return self._synced

    def list(self) -> list[Obj]:
        """Every object, sorted by (namespace, name) as a LIST returns them. Raises NotSyncedError before
        the first LIST was handed over."""
        with self._lock:
            if not self._synced:
                raise NotSyncedError(f"the {self.resource.plural} watch has not listed yet")
            return [self._objects[key] for key in sorted(self._objects)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)


class WatchCache:
    """A `Store` per resource given; `list(resource)` reads one. A cache serves one leadership term: the
    leader builds it with its watches, and it is dropped with them."""

    def __init__(self, resources: Iterable[r.Resource]) -> None:
        self._stores = {resource.plural: Store(resource) for resource in resources}

    def store(self, resource: r.Resource) -> Store | None:
        """The store of `resource`, None when this cache does not keep it."""
        return self._stores.get(resource.plural)

    def list(self, resource: r.Resource) -> list[Obj]:
        """Every cached object of `resource` (Store.list). Raises KeyError for a resource not cached,
        NotSyncedError while its watch has not listed."""
        return self._stores[resource.plural].list()

    @property
    def synced(self) -> bool:
        """Every store has been filled by its first LIST."""
        return all(store.synced for store in self._stores.values())

    @property
    def changes(self) -> int:
        """How many events the stores have taken in all. Each store's count only grows and moves once the
        store shows the event, so a reader that reads the same total before two reads of the stores knows
        that neither read saw an event the other did not."""
        return sum(store.changes for store in self._stores.values())


def read(kube: Kube, resource: r.Resource, cache: WatchCache | None) -> list[Obj]:
    """Every object of `resource`: from `cache` when it keeps them and every one of its watches has
    listed, else LISTed through `kube` (a worker that is not the leader, or a leader whose watches have not
    listed yet)."""
    if cache is not None and cache.synced and cache.store(resource) is not None:
        return cache.list(resource)
    return kube.list(resource)
