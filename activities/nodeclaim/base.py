"""What the NodeClaim lifecycle activities of every phase share: the boundaries they act through and the
reads and writes of the claim's own NodeClaim and Node (always through activities.nodeclaim.ownership, which
refuses objects that are not the claim's).

Every activity is idempotent (a retry after a crash at any line converges) and synchronous (run in the
worker's thread pool). Expected outcomes (insufficient capacity, a PDB refusal, a node not there yet) are
results, not exceptions; exceptions mean "retry me" unless they are non-retryable ApplicationErrors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from activities.metrics.labels import seconds_since
from activities.metrics.registry import Metrics
from activities.nodeclaim import ownership
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from apis import labels
from apis.meta import now_rfc3339, set_condition, with_root_condition
from apis.nodeclaim import READY_DEPENDENTS, NodeClaim
from cloudprovider.types import CloudProvider
from kube import ops as kubeops
from kube import resources as r
from kube.node_directory import NodeDirectory
from kube.shared_reads import SharedReads
from kube.types import Kube, Obj


def dropping_condition(type_: str) -> Callable[[Obj], bool]:
    """A status mutation for a NodeClaim (`ownership.update(..., subresource="status")`): remove the
    condition `type_`; False when it has none."""

    def mutate(obj: Obj) -> bool:
        conditions = (obj.get("status") or {}).get("conditions") or []
        kept = [c for c in conditions if c.get("type") != type_]
        if len(kept) == len(conditions):
            return False
        obj["status"]["conditions"] = kept
        return True

    return mutate


def setting_conditions(*updates: tuple[str, str, str, str], **status: Any) -> Callable[[Obj], bool]:
    """A status mutation for a NodeClaim (`ownership.update(..., subresource="status")`): set these
    conditions (type, status, reason, message), stamped now, and these other status fields, then Ready
    over Launched, Registered and Initialized as Karpenter keeps it (apis.meta.with_root_condition: a
    claim launching is Ready Unknown, one whose launch failed Ready False); False when nothing changes."""
    stamp = now_rfc3339()

    def mutate(obj: Obj) -> bool:
        claim = NodeClaim.model_validate(obj)
        conditions = claim.status.conditions
        for type_, state, reason, message in updates:
            conditions = set_condition(conditions, type_, state, reason, message, stamp)  # type: ignore[arg-type]
        conditions = with_root_condition(conditions, READY_DEPENDENTS, stamp)
        new = claim.status.model_copy(update={"conditions": conditions, **status}).to_kube()
        if new == obj.get("status"):
            return False
        obj["status"] = new
        return True

    return mutate


def claim_logger(logger: logging.Logger, ref: ClaimRef, nodepool: str = "") -> logging.LoggerAdapter[logging.Logger]:
    """`logger` with the claim in every record's `extra`: `nodeclaim`, and `node` (a ClaimIdentity's node
    name) and `nodepool` when known, so JSON log lines carry them (workers.log_format). Messages still name
    the claim for the text format, which leaves `extra` out."""
    extra = {"nodeclaim": ref.name, "node": getattr(ref, "node_name", ""), "nodepool": nodepool}
    return logging.LoggerAdapter(logger, {key: value for key, value in extra.items() if value})


class ClaimActivities:
    """Base of each phase's activity class. Construct with the boundaries (the composition root does, see
    activities.nodeclaim.lifecycle); `shared_reads`, `metrics` and `nodes` (the Node watch's providerID index, see
    kube.node_directory) may be shared by the phases of one worker."""

    def __init__(
        self,
        kube: Kube,
        cloud: CloudProvider,
        recorder: kubeops.Recorder,
        cluster_name: str,
        shared_reads: SharedReads | None = None,
        metrics: Metrics | None = None,
        nodes: NodeDirectory | None = None,
    ) -> None:
        self.kube = kube
        self.cloud = cloud
        self.recorder = recorder
        self.cluster_name = cluster_name
        self.shared_reads = shared_reads or SharedReads(kube)
        self.metrics = metrics or Metrics()
        self.nodes = nodes or NodeDirectory()

    @property
    def activities(self) -> list[Callable[..., Any]]:
        """This phase's activities, bound, for the worker to register."""
        raise NotImplementedError

    # -- the claim's own objects -------------------------------------------------------------------------

    @staticmethod
    def _own_claim(ref: ClaimRef) -> ownership.Owned:
        return ownership.node_claim(ref.name, ref.uid)

    @staticmethod
    def _own_node(ident: ClaimIdentity, node_name: str = "") -> ownership.Owned:
        return ownership.node(node_name or ident.node_name, ident.provider_id, ident.node_uid)

    def _claim_obj(self, ref: ClaimRef) -> Obj | None:
        """The claim's NodeClaim, or None when it is gone or the name is another claim's."""
        return ownership.get(self.kube, self._own_claim(ref))

    def _claim(self, ref: ClaimRef) -> NodeClaim | None:
        obj = self._claim_obj(ref)
        return NodeClaim.model_validate(obj) if obj is not None else None

    def _foreign_claim(self, ref: ClaimRef) -> str:
        """Why the NodeClaim named `ref.name` is another claim's (same name, other uid); '' when it is this
        claim's or gone. Instances tagged with the name then belong to that other claim."""
        obj = kubeops.get_or_none(self.kube, r.NODECLAIM, ref.name)
        mismatch = self._own_claim(ref).mismatch(obj) if obj is not None else ""
        return f"{mismatch}: another NodeClaim with this name; this one no longer exists" if mismatch else ""

    def _set_conditions(self, ref: ClaimRef, *updates: tuple[str, str, str, str], **status: Any) -> None:
        """Set status conditions (type, status, reason, message) and other status fields on the claim."""
        ownership.update(self.kube, self._own_claim(ref), setting_conditions(*updates, **status), subresource="status")

    @staticmethod
    def _pool_of(claim: Obj | NodeClaim | None) -> str:
        """The NodePool a claim was launched from (its `karpenter.sh/nodepool` label), '' when unknown."""
        if claim is None:
            return ""
        found = claim.metadata.labels if isinstance(claim, NodeClaim) else claim["metadata"].get("labels") or {}
        return str(found.get(labels.NODEPOOL, ""))

    def _observe_startup(self, claim: NodeClaim, condition: str) -> None:
        """`condition` just turned True on `claim` (as read before): time it from the claim's creation."""
        elapsed = seconds_since(claim.metadata.creation_timestamp)
        if elapsed is None:
            return
        histogram = self.metrics.nodeclaims_startup_duration
        histogram.labels(condition=condition, nodepool=self._pool_of(claim)).observe(elapsed)

    def _drop_condition(self, ref: ClaimRef, type_: str) -> None:
        ownership.update(self.kube, self._own_claim(ref), dropping_condition(type_), subresource="status")

    def _annotate(self, ref: ClaimRef, stamp: dict[str, str]) -> None:
        """Add these annotations to the claim (a no-op when they are there already)."""

        def mutate(obj: Obj) -> bool:
            annotations = obj["metadata"].get("annotations") or {}
            if all(annotations.get(k) == v for k, v in stamp.items()):
                return False
            obj["metadata"]["annotations"] = {**annotations, **stamp}
            return True

        ownership.update(self.kube, self._own_claim(ref), mutate)
