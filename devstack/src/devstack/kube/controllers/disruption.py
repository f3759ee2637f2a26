"""Disruption controller: keeps every PodDisruptionBudget's status current as pods change."""

from __future__ import annotations

from collections.abc import Iterable

from devstack.kube import catalog
from devstack.kube.catalog import ServedResource
from devstack.kube.controllers.base import Controller, NsName
from devstack.kube.disruption import budget_status
from devstack.kube.store import WatchEvent


class DisruptionController(Controller[NsName]):
    name = "disruption"

    def keys_for(self, res: ServedResource, event: WatchEvent) -> Iterable[NsName]:
        namespace = event.obj["metadata"].get("namespace")
        if res == catalog.PDB and event.type != "DELETED":
            return [(namespace, event.obj["metadata"]["name"])]
        if res == catalog.POD:
            return [(namespace, pdb["metadata"]["name"]) for pdb in self.store.list(catalog.PDB, namespace)]
        return []

    def reconcile(self, key: NsName) -> None:
        namespace, name = key
        pdb = self.store.find(catalog.PDB, namespace, name)
        if pdb is None:
            return
        status = budget_status(self.store, pdb)
        if status != pdb.get("status"):
            self.store.update(catalog.PDB, namespace, name, {**pdb, "status": status}, "status")
