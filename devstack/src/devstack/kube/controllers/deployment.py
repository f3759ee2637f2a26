"""Deployment controller: one ReplicaSet per pod template, labelled with ``pod-template-hash``.

The ReplicaSet for the current template gets ``spec.replicas``; ReplicaSets of older templates
are scaled to zero at once (a simplified rollout: no surge or unavailability pacing). Paused
deployments are left alone. Status sums the owned ReplicaSets' replicas, ready and available
counts, and sets Available/Progressing conditions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from devstack.kube import bookkeeping, catalog
from devstack.kube.catalog import ServedResource
from devstack.kube.controllers.base import Controller, NsName
from devstack.kube.ownership import controller_of, is_controlled_by, is_deleting, owner_reference
from devstack.kube.patches import clone
from devstack.kube.store import WatchEvent

HASH_LABEL = "pod-template-hash"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: dict[str, Any]) -> str:
    """A short stable hash of a pod template, in the apiserver's name alphabet."""
    digest = int.from_bytes(hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()[:8], "big")
    chars = []
    for _ in range(10):
        digest, idx = divmod(digest, len(_ALPHABET))
        chars.append(_ALPHABET[idx])
    return "".join(chars)


class DeploymentController(Controller[NsName]):
    name = "deployment"

    def keys_for(self, res: ServedResource, event: WatchEvent) -> Iterable[NsName]:
        meta = event.obj["metadata"]
        if res == catalog.DEPLOYMENT:
            return [(meta["namespace"], meta["name"])]
        if res == catalog.REPLICASET:
            ref = controller_of(event.obj)
            if ref and ref.get("kind") == "Deployment":
                return [(meta["namespace"], ref["name"])]
        return []

    def reconcile(self, key: NsName) -> None:
        namespace, name = key
        deploy = self.store.find(catalog.DEPLOYMENT, namespace, name)
        if deploy is None or is_deleting(deploy):
            return
        spec = deploy.get("spec") or {}
        owned = [rs for rs in self.store.list(catalog.REPLICASET, namespace) if is_controlled_by(rs, deploy)]
        if not spec.get("paused"):
            current_hash = template_hash(spec.get("template") or {})
            new_name = f"{name}-{current_hash}"
            if not any(rs["metadata"]["name"] == new_name for rs in owned):
                owned.append(self.store.create(catalog.REPLICASET, namespace, self._new_rs(deploy, current_hash)))
            for rs in owned:
                replicas = int(spec.get("replicas", 1)) if rs["metadata"]["name"] == new_name else 0
                if (rs.get("spec") or {}).get("replicas") != replicas:
                    updated = clone(rs)
                    updated["spec"]["replicas"] = replicas
                    self.store.update(catalog.REPLICASET, namespace, rs["metadata"]["name"], updated)
        self._write_status(deploy, owned)

    @staticmethod
    def _new_rs(deploy: dict[str, Any], pod_hash: str) -> dict[str, Any]:
        spec = deploy.get("spec") or {}
        template = clone(spec.get("template") or {})
        labels = {**((template.get("metadata") or {}).get("labels") or {}), HASH_LABEL: pod_hash}
        template.setdefault("metadata", {})["labels"] = labels
        selector = clone(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
        revision = str(int(deploy["metadata"].get("generation", 1)))
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{deploy['metadata']['name']}-{pod_hash}",
                "labels": labels,
                "annotations": {"deployment.kubernetes.io/revision": revision},
                "ownerReferences": [owner_reference(catalog.DEPLOYMENT, deploy)],
            },
            "spec": {"replicas": int(spec.get("replicas", 1)), "selector": selector, "template": template},
        }

    def _write_status(self, deploy: dict[str, Any], owned: list[dict[str, Any]]) -> None:
        fresh = [
            self.store.find(catalog.REPLICASET, deploy["metadata"]["namespace"], rs["metadata"]["name"]) for rs in owned
        ]
        live = [rs for rs in fresh if rs is not None]
        current_hash = template_hash((deploy.get("spec") or {}).get("template") or {})

        def total(field: str, only_new: bool = False) -> int:
            return sum(
                int((rs.get("status") or {}).get(field, 0))
                for rs in live
                if not only_new or rs["metadata"]["name"].endswith(f"-{current_hash}")
            )

        wanted = int((deploy.get("spec") or {}).get("replicas", 1))
        available = total("availableReplicas")
        old = deploy.get("status") or {}
        status = {
            "observedGeneration": deploy["metadata"].get("generation", 1),
            "replicas": total("replicas"),
            "updatedReplicas": total("replicas", only_new=True),
            "readyReplicas": total("readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(0, wanted - available),
            "conditions": [
                self._condition(
                    old, "Available", available >= wanted, "MinimumReplicasAvailable", "MinimumReplicasUnavailable"
                ),
                self._condition(old, "Progressing", True, "NewReplicaSetAvailable", "ReplicaSetUpdated"),
            ],
        }
        if status != old:
            meta = deploy["metadata"]
            self.store.update(
                catalog.DEPLOYMENT, meta["namespace"], meta["name"], {**deploy, "status": status}, "status"
            )

    def _condition(self, old: dict[str, Any], kind: str, ok: bool, yes: str, no: str) -> dict[str, Any]:
        status = "True" if ok else "False"
        for cond in old.get("conditions") or []:
            if cond.get("type") == kind and cond.get("status") == status:
                return dict(cond)
        now = bookkeeping.timestamp(self.store.now())
        return {
            "type": kind,
            "status": status,
            "reason": yes if ok else no,
            "message": "",
            "lastUpdateTime": now,
            "lastTransitionTime": now,
        }
