"""Garbage collection by ownerReferences (background propagation).

When an owner is deleted, every object whose ownerReferences all point at owners that no longer
exist is deleted (owners are matched by uid, across all served resources). Objects created
with references only to missing owners are collected too, as the real garbage collector does.
Foreground and orphan propagation are not emulated.
"""

from __future__ import annotations

from collections.abc import Iterable

from devstack.kube import catalog
from devstack.kube.catalog import ServedResource
from devstack.kube.controllers.base import Controller
from devstack.kube.store import ObjectStore, WatchEvent

Ref = tuple[str, str | None, str]  # (resource key, namespace, name)


class GarbageCollector(Controller[Ref]):
    name = "garbage-collector"

    def __init__(self, store: ObjectStore) -> None:
        super().__init__(store)
        self._alive: set[str] = set()  # uids of stored objects
        self._dependents: dict[str, dict[Ref, None]] = {}  # owner uid -> dependents (ordered)
        self._by_key = {r.key: r for r in catalog.SERVED}
        for res in catalog.SERVED:
            for obj in self.store.iter_all(res):
                self._index(res, obj, deleted=False)

    def _index(self, res: ServedResource, obj: dict[str, object], deleted: bool) -> Ref:
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        ref: Ref = (res.key, meta.get("namespace"), meta["name"])
        if deleted:
            self._alive.discard(meta["uid"])
        else:
            self._alive.add(meta["uid"])
        for owner in meta.get("ownerReferences") or []:
            deps = self._dependents.setdefault(owner["uid"], {})
            if deleted:
                deps.pop(ref, None)
                if not deps:
                    del self._dependents[owner["uid"]]
            else:
                deps[ref] = None
        return ref

    def keys_for(self, res: ServedResource, event: WatchEvent) -> Iterable[Ref]:
        deleted = event.type == "DELETED"
        ref = self._index(res, event.obj, deleted)
        if deleted:
            return list(self._dependents.get(event.obj["metadata"]["uid"], {}))
        if event.type == "ADDED" and event.obj["metadata"].get("ownerReferences"):
            return [ref]
        return []

    def reconcile(self, key: Ref) -> None:
        res_key, namespace, name = key
        res = self._by_key[res_key]
        obj = self.store.find(res, namespace, name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        owners = obj["metadata"].get("ownerReferences") or []
        if owners and not any(o.get("uid") in self._alive for o in owners):
            self.store.delete(res, namespace, name)
