"""EC2NodeClass termination, as Karpenter's node class termination controller does it.

Every EC2NodeClass nodeflow reconciles gets the finalizer `karpenter.k8s.aws/termination` before anything
is created for it in the cloud (its instance profile is created when it is first resolved). When it is
deleted, the finalizer keeps it until no NodeClaim references it (`spec.nodeClassRef.name`); meanwhile
its Ready condition and a Warning event (`WaitingOnNodeClaimTermination`) say how many NodeClaims it
waits for. Then the launch templates and the instance profile nodeflow created for it are deleted
(`CloudProvider.delete_node_class_resources`: never a `spec.instanceProfile` the user gave, never
anything nodeflow did not tag as its own) and the finalizer is removed, so the object goes.

Runs in the provisioner's `solve` round, which reconciles every EC2NodeClass (on pod changes, and at
least every resync interval), so a deleted node class is let go within one round of its last NodeClaim.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from apis import labels
from cloudprovider.errors import CloudProviderError
from cloudprovider.types import CloudProvider
from kube import resources as r
from kube.errors import ConflictError, NotFoundError
from kube.types import Kube, Obj

log = logging.getLogger(__name__)

FINALIZER = labels.NODECLASS_TERMINATION_FINALIZER
WAITING = "WaitingOnNodeClaimTermination"
FAILED = "TerminationFailed"
NAMES_SHOWN = 5


def is_terminating(node_class: Obj) -> bool:
    return bool((node_class.get("metadata") or {}).get("deletionTimestamp"))


def has_finalizer(node_class: Obj) -> bool:
    return FINALIZER in ((node_class.get("metadata") or {}).get("finalizers") or [])


def referencing_claims(node_class_name: str, claims: Iterable[Obj]) -> list[str]:
    """The names, sorted, of the NodeClaims whose `spec.nodeClassRef` names this EC2NodeClass (being
    deleted or not: each holds the node class until it is gone)."""
    names = []
    for claim in claims:
        ref = (claim.get("spec") or {}).get("nodeClassRef") or {}
        if ref.get("name") == node_class_name and ref.get("kind", "EC2NodeClass") == "EC2NodeClass":
            names.append(str(claim["metadata"]["name"]))
    return sorted(names)


def waiting_message(node_class_name: str, claims: list[str]) -> str:
    """The condition and event message while the deleted node class waits for `claims` (non-empty)."""
    shown = ", ".join(claims[:NAMES_SHOWN]) + (
        f" and {len(claims) - NAMES_SHOWN} more" if len(claims) > NAMES_SHOWN else ""
    )
    noun = "NodeClaim" if len(claims) == 1 else "NodeClaims"
    return (
        f"EC2NodeClass {node_class_name} is being deleted: waiting for {len(claims)} {noun} that reference it "
        f"to terminate ({shown}); delete them, or the NodePools that use this node class"
    )


def with_finalizer(node_class: Obj) -> list[str] | None:
    """The node class's finalizers with FINALIZER added; None when it has it or is being deleted
    (Kubernetes refuses new finalizers then)."""
    finalizers = list((node_class.get("metadata") or {}).get("finalizers") or [])
    if FINALIZER in finalizers or is_terminating(node_class):
        return None
    return [*finalizers, FINALIZER]


def without_finalizer(node_class: Obj) -> list[str] | None:
    """The node class's finalizers with FINALIZER removed; None when it does not have it."""
    finalizers = list((node_class.get("metadata") or {}).get("finalizers") or [])
    return [f for f in finalizers if f != FINALIZER] if FINALIZER in finalizers else None


class NodeClassTermination:
    """The finalizer's two halves, over the Kubernetes and cloud boundaries."""

    def __init__(self, kube: Kube, cloud: CloudProvider) -> None:
        self.kube = kube
        self.cloud = cloud

    def ensure_finalizer(self, node_class: Obj) -> Obj | None:
        """The node class with the finalizer added (written only when missing); None when it is gone or
        changed since it was read (the next round adds it)."""
        finalizers = with_finalizer(node_class)
        return node_class if finalizers is None else self._write_finalizers(node_class, finalizers)

    def _write_finalizers(self, node_class: Obj, finalizers: list[str]) -> Obj | None:
        """Patch `metadata.finalizers` alone, nothing of the user's spec, guarded by the resourceVersion
        read: the object as written, or None when it is gone or changed since."""
        meta = node_class["metadata"]
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}}
        try:
            return self.kube.patch(r.EC2NODECLASS, meta["name"], patch, patch_type="merge")
        except (NotFoundError, ConflictError):
            return None

    def finalize(self, node_class: Obj, claims: list[Obj]) -> tuple[str, str]:
        """One step of a deleted node class's termination, given every NodeClaim of the cluster. Returns
        ('', '') once it is let go (or it never had the finalizer), else (reason, message) of what holds
        it: NodeClaims that reference it, or a cloud error deleting its resources (tried again next
        round)."""
        name = str(node_class["metadata"]["name"])
        if not has_finalizer(node_class):
            return "", ""
        waiting = referencing_claims(name, claims)
        if waiting:
            return WAITING, waiting_message(name, waiting)
        spec = node_class.get("spec") or {}
        try:
            deleted = self.cloud.delete_node_class_resources(name, spec.get("instanceProfile") or None)
        except CloudProviderError as error:
            log.warning("EC2NodeClass %s: deleting its launch templates and instance profile failed: %s", name, error)
            return FAILED, (
                f"EC2NodeClass {name} is being deleted: deleting its launch templates and instance profile "
                f"failed ({error}); retrying, check the controller's IAM permissions if it persists"
            )
        log.info(
            "EC2NodeClass %s deleted: removed launch templates %s and instance profile %s",
            name,
            deleted.launch_templates or "(none)",
            deleted.instance_profile or "(none of nodeflow's)",
        )
        # Written with the resourceVersion read this round: if the object changed meanwhile (or a same-named
        # one replaced it), nothing is written and the next round decides again.
        remaining = without_finalizer(node_class)
        if remaining is not None:
            self._write_finalizers(node_class, remaining)
        return "", ""
