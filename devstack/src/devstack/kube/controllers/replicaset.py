"""ReplicaSet controller: keep ``spec.replicas`` pods alive for every ReplicaSet.

Pods are created from ``spec.template`` with generateName ``<rs>-`` and a controller
ownerReference; pods that are deleted, evicted or finished are replaced. Surplus pods are
deleted unbound first, then not-ready, then newest (by name within equal rank), like the real
controller's ranking. Status reports replicas, fullyLabeledReplicas, readyReplicas,
availableReplicas and observedGeneration.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from devstack.kube import catalog
from devstack.kube.catalog import ServedResource
from devstack.kube.controllers.base import Controller, NsName
from devstack.kube.ownership import controller_of, is_controlled_by, is_deleting, owner_reference
from devstack.kube.patches import clone
from devstack.kube.store import ObjectStore, WatchEvent


def _is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _is_active(pod: dict[str, Any]) -> bool:
    return not is_deleting(pod) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _deletion_rank(pod: dict[str, Any]) -> tuple[int, int, str, str]:
    bound = 1 if (pod.get("spec") or {}).get("nodeName") else 0
    ready = 1 if _is_ready(pod) else 0
    # Newer first among equals: invert the creation time order by sorting on a negated string key.
    created = pod["metadata"].get("creationTimestamp", "")
    return (bound, ready, "".join(chr(0x10FFFF - ord(c)) for c in created), pod["metadata"]["name"])


class ReplicaSetController(Controller[NsName]):
    name = "replicaset"

    def __init__(self, store: ObjectStore) -> None:
        super().__init__(store)
        # ReplicaSet uid -> names of the pods it controls (an informer-style index, kept from events).
        self._owned: dict[str, dict[str, None]] = {}
        for pod in store.iter_all(catalog.POD):
            self._track(pod, deleted=False)

    def _track(self, pod: dict[str, Any], deleted: bool) -> dict[str, Any] | None:
        ref = controller_of(pod)
        if not ref or ref.get("kind") != "ReplicaSet":
            return None
        pods = self._owned.setdefault(ref["uid"], {})
        if deleted:
            pods.pop(pod["metadata"]["name"], None)
        else:
            pods[pod["metadata"]["name"]] = None
        return ref

    def keys_for(self, res: ServedResource, event: WatchEvent) -> Iterable[NsName]:
        if res == catalog.REPLICASET:
            if event.type == "DELETED":
                self._owned.pop(event.obj["metadata"]["uid"], None)
            return [(event.obj["metadata"]["namespace"], event.obj["metadata"]["name"])]
        if res == catalog.POD:
            ref = self._track(event.obj, deleted=event.type == "DELETED")
            if ref:
                return [(event.obj["metadata"]["namespace"], ref["name"])]
        return []

    def _pods_of(self, rs: dict[str, Any]) -> list[dict[str, Any]]:
        namespace = rs["metadata"]["namespace"]
        found = (self.store.find(catalog.POD, namespace, n) for n in self._owned.get(rs["metadata"]["uid"], {}))
        return [p for p in found if p is not None and is_controlled_by(p, rs)]

    def reconcile(self, key: NsName) -> None:
        namespace, name = key
        rs = self.store.find(catalog.REPLICASET, namespace, name)
        if rs is None or is_deleting(rs):
            return
        owned = self._pods_of(rs)
        active = [p for p in owned if _is_active(p)]
        wanted = int((rs.get("spec") or {}).get("replicas", 1))
        if len(active) < wanted:
            for _ in range(wanted - len(active)):
                active.append(self.store.create(catalog.POD, namespace, self._new_pod(rs)))
        elif len(active) > wanted:
            surplus = sorted(active, key=_deletion_rank)[: len(active) - wanted]
            for pod in surplus:
                self.store.delete(catalog.POD, namespace, pod["metadata"]["name"])
            gone = {p["metadata"]["name"] for p in surplus}
            active = [p for p in active if p["metadata"]["name"] not in gone]
        self._write_status(rs, active)

    @staticmethod
    def _new_pod(rs: dict[str, Any]) -> dict[str, Any]:
        template = clone((rs.get("spec") or {}).get("template") or {})
        meta = template.get("metadata") or {}
        meta.pop("name", None)
        meta["generateName"] = f"{rs['metadata']['name']}-"
        meta["namespace"] = rs["metadata"]["namespace"]
        meta["ownerReferences"] = [owner_reference(catalog.REPLICASET, rs)]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec") or {}}

    def _write_status(self, rs: dict[str, Any], active: list[dict[str, Any]]) -> None:
        ready = sum(1 for p in active if _is_ready(p))
        status = {
            **(rs.get("status") or {}),
            "replicas": len(active),
            "fullyLabeledReplicas": len(active),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if status != rs.get("status"):
            meta = rs["metadata"]
            self.store.update(catalog.REPLICASET, meta["namespace"], meta["name"], {**rs, "status": status}, "status")
