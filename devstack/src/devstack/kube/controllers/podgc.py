"""Pod garbage collection: pods bound to a Node that does not exist are deleted.

When a Node is deleted every pod bound to it goes at once. A pod written while bound to a Node
that does not exist is re-checked ``orphan_grace_seconds`` later and deleted if the Node is still
missing (the real collector quarantines such pods similarly), so creating a pod just before its
Node is not punished.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from devstack.kube import catalog
from devstack.kube.catalog import ServedResource
from devstack.kube.controllers.base import Controller, NsName
from devstack.kube.selectors import parse_field_selector
from devstack.kube.store import WatchEvent


class PodGarbageCollector(Controller[NsName]):
    name = "pod-gc"
    orphan_grace_seconds = 5.0

    def keys_for(self, res: ServedResource, event: WatchEvent) -> Iterable[NsName]:
        if res == catalog.POD and event.type != "DELETED":
            node = (event.obj.get("spec") or {}).get("nodeName")
            if node and self.store.find(catalog.NODE, None, node) is None:
                key = (event.obj["metadata"]["namespace"], event.obj["metadata"]["name"])
                asyncio.get_running_loop().call_later(self.orphan_grace_seconds, self.enqueue, key)
        if res == catalog.NODE and event.type == "DELETED":
            on_node = parse_field_selector(f"spec.nodeName={event.obj['metadata']['name']}")
            return [
                (p["metadata"]["namespace"], p["metadata"]["name"]) for p in self.store.list(catalog.POD, None, on_node)
            ]
        return []

    def reconcile(self, key: NsName) -> None:
        namespace, name = key
        pod = self.store.find(catalog.POD, namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node and self.store.find(catalog.NODE, None, node) is None:
            self.store.delete(catalog.POD, namespace, name)
