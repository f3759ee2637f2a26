"""Pending pods whose PersistentVolumeClaims cannot be used yet, so that no node is launched for them: the
cases the kube-scheduler's volume binding rejects, as Karpenter's provisioner leaves such pods out of its
batch (`ValidatePersistentVolumeClaims` in its volume topology):

- the claim is being deleted, or is `Lost` (its volume is gone);
- the claim names a volume that is being deleted, or that the PV controller has not finished binding to
  it (no `pv.kubernetes.io/bind-completed` annotation: the kube-scheduler treats it as unbound);
- the claim is unbound and its StorageClass binds `Immediate`ly (a volume is provisioned for it in some
  zone of the provisioner's choosing, after which the pod's zone follows the volume's), does not exist,
  or there is none (no `storageClassName` and no default class).

A pod whose claim or bound volume is missing altogether is reported by the solver itself, as an invalid
pod (scheduling.provisioning.state). Only pending pods are checked: the pods a consolidation simulation moves are
already running with their volumes. Generic ephemeral volumes are not checked: their claims are created
with the pod, from a template whose StorageClass the solver already honours."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduling.provisioning.pods import Obj
from scheduling.provisioning.state import VolumeObjects

VOLUMES_NOT_READY = "waiting for its volumes"  # how the reason of such a pod begins
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
IMMEDIATE = "Immediate"  # the API server's default volumeBindingMode


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class VolumeReadiness(VolumeObjects):
    """Built from the cluster's PersistentVolumeClaims, PersistentVolumes and StorageClasses (JSON as the
    API serves them); `problem(pod)` says why a pending pod's claims cannot be used yet, or None."""

    def problem(self, pod: Obj) -> str | None:
        namespace = _meta(pod).get("namespace") or "default"
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            source = volume.get("persistentVolumeClaim") if isinstance(volume, Mapping) else None
            if not isinstance(source, Mapping):
                continue
            claim = self.pvcs.get((namespace, source.get("claimName")))
            if claim is None:
                continue  # the solver reports a missing claim
            why = self._claim_problem(claim)
            if why:
                return f'{VOLUMES_NOT_READY}: PersistentVolumeClaim "{namespace}/{source.get("claimName")}" {why}'
        return None

    def _claim_problem(self, claim: Obj) -> str | None:
        if _meta(claim).get("deletionTimestamp"):
            return "is being deleted"
        spec = claim.get("spec") or {}
        volume_name = spec.get("volumeName")
        if (claim.get("status") or {}).get("phase") == "Lost":
            return f'is Lost: the PersistentVolume "{volume_name}" it was bound to no longer exists'
        if volume_name:
            volume = self.pvs.get(volume_name)
            if volume is None:
                return None  # the solver reports a missing volume
            if _meta(volume).get("deletionTimestamp"):
                return f'is bound to PersistentVolume "{volume_name}", which is being deleted'
            if BIND_COMPLETED not in (_meta(claim).get("annotations") or {}):
                return (
                    f'names PersistentVolume "{volume_name}" but is not bound to it yet (no {BIND_COMPLETED} '
                    "annotation): the kube-scheduler treats it as unbound until the PV controller binds it"
                )
            return None
        class_name = spec.get("storageClassName") or self.default_class
        if not class_name:
            return "is unbound, names no StorageClass and the cluster has no default one: set spec.storageClassName"
        storage_class = self.classes.get(class_name)
        if storage_class is None:
            return f'is unbound and its StorageClass "{class_name}" does not exist'
        if (storage_class.get("volumeBindingMode") or IMMEDIATE) == IMMEDIATE:
            return (
                f'is unbound and its StorageClass "{class_name}" binds Immediate: the pod is provisioned for once '
                "the volume exists and the claim is bound (use volumeBindingMode WaitForFirstConsumer to let the "
                "pod choose the zone)"
            )
        return None
