"""Namespace controller: when a Namespace is deleted, everything in it is deleted too.

Simplified from the real two-phase flow (phase Terminating until the namespace is empty): the
Namespace goes at once and its contents follow; objects with finalizers keep their
deletionTimestamp until the finalizers are removed.
"""

from __future__ import annotations

from collections.abc import Iterable

from devstack.kube import catalog
from devstack.kube.catalog import ServedResource
from devstack.kube.controllers.base import Controller
from devstack.kube.store import WatchEvent


class NamespaceController(Controller[str]):
    name = "namespace"

    def keys_for(self, res: ServedResource, event: WatchEvent) -> Iterable[str]:
        if res == catalog.NAMESPACE and event.type == "DELETED":
            return [event.obj["metadata"]["name"]]
        return []

    def reconcile(self, key: str) -> None:
        if self.store.find(catalog.NAMESPACE, None, key) is not None:
            return  # re-created meanwhile: its objects belong to the new namespace
        for res in catalog.SERVED:
            if not res.namespaced:
                continue
            for obj in self.store.list(res, key):
                if not obj["metadata"].get("deletionTimestamp"):
                    self.store.delete(res, key, obj["metadata"]["name"])
