"""The running phase of a NodeClaim: liveness (is the claim or its Node gone or being deleted, a backstop
for missed signals) and drift (Karpenter: nodeclaim/disruption/drift.go, which only marks the claim
Drifted; replacing drifted nodes is the disruption controller's job)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from temporalio import activity

from activities.metrics.registry import Metrics
from activities.nodeclaim import ownership
from activities.nodeclaim.base import ClaimActivities
from activities.nodeclaim.drift import (
    DRIFT_CHECK_VERSION,
    InstanceNetworks,
    OfferedInstanceTypes,
    ResolvedNodeClasses,
    drift_facts,
)
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from apis import labels
from apis.ec2nodeclass import STATIC_HASH_VERSION, EC2NodeClass
from apis.meta import is_true
from apis.nodeclaim import DRIFTED, NodeClaim
from apis.nodepool import TEMPLATE_HASH_VERSION, NodePool
from cloudprovider.types import CloudProvider
from kube import ops as kubeops
from kube import resources as r
from kube.node_directory import NodeDirectory
from kube.shared_reads import SharedReads
from kube.types import Kube, Obj
from scheduling.drift import find_drift


class ClaimLiveness(BaseModel):
    """Whether the claim and its node still exist and are not being deleted, read fresh. An object with the
    claim's (or node's) name and another identity counts as not existing."""

    exists: bool = True
    deleting: bool = False
    node_deleting: bool = False
    node_exists: bool = True

    @property
    def gone(self) -> bool:
        """The claim or its node is gone or being deleted: the node drains and terminates."""
        return self.deleting or self.node_deleting or not self.node_exists


class DriftCheckInput(ClaimIdentity):
    instance_id: str = ""


class DriftResult(BaseModel):
    """The outcome of a drift check: `reason` is one of scheduling.drift.REASONS when drifted."""

    drifted: bool = False
    reason: str = ""
    message: str = ""


class RunningCheck(BaseModel):
    """The running phase's one round trip per cycle: the claim's liveness, then (while it is alive) its
    drift check. `drift` is left at its defaults when the claim or its node is gone or being deleted."""

    liveness: ClaimLiveness = Field(default_factory=ClaimLiveness)
    drift: DriftResult = Field(default_factory=DriftResult)

    @property
    def gone(self) -> bool:
        return self.liveness.gone


class RunningActivities(ClaimActivities):
    """`running_check`. Keeps the drift check's per-worker caches of
    resolved node classes, instance networks and offered instance types (activities.nodeclaim.drift)."""

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
        super().__init__(kube, cloud, recorder, cluster_name, shared_reads, metrics, nodes)
        self.resolved_node_classes = ResolvedNodeClasses(cloud)
        self.instance_networks = InstanceNetworks(cloud)
        self.offered_instance_types = OfferedInstanceTypes(cloud)

    @property
    def activities(self) -> list[Callable[..., Any]]:
        return [self.running_check]

    def _liveness(self, claim: Obj | None, ident: ClaimIdentity) -> ClaimLiveness:
        node = ownership.get(self.kube, self._own_node(ident)) if ident.node_name else None
        return ClaimLiveness(
            exists=claim is not None,
            deleting=claim is None or bool(claim["metadata"].get("deletionTimestamp")),
            node_exists=node is not None,
            node_deleting=node is not None and bool(node["metadata"].get("deletionTimestamp")),
        )

    @activity.defn(name="running_check")
    def running_check(self, inp: DriftCheckInput) -> RunningCheck:
        """One cycle of the running phase in one activity (one command in the workflow's history and
        cache): the claim's liveness (is it or its node gone or being deleted, a backstop for missed
        signals), then, unless it is going away, its drift: compare the claim with its NodePool,
        EC2NodeClass and instance (scheduling.drift) and keep its `Drifted` condition in step (True with
        the reason and message while drifted, removed once not; drift only marks the claim). Reads the
        claim, the node, the NodePool and the EC2NodeClass once each, fresh: the check runs because one of
        them changed (the worker's signals), so a shared read up to SHARED_READ_TTL_SECONDS old could miss
        the change (the fresh reads refresh the worker's shared reads, kube.shared_reads)."""
        claim = self._claim_obj(inp)
        result = RunningCheck(liveness=self._liveness(claim, inp))
        if not result.gone and claim is not None:
            result.drift = self._refresh_drift(inp, claim)
        return result

    def _refresh_drift(self, inp: DriftCheckInput, claim_obj: Obj) -> DriftResult:
        try:
            claim = NodeClaim.model_validate(claim_obj)
        except ValidationError:
            return DriftResult(message="the NodeClaim does not validate; drift not checked")
        pool_name = claim.metadata.labels.get(labels.NODEPOOL, "")
        reads = self.shared_reads
        pool = reads.get(NodePool, r.NODEPOOL, pool_name, fresh=True) if pool_name else None
        node_class = reads.get(EC2NodeClass, r.EC2NODECLASS, claim.spec.node_class_ref.name, fresh=True)
        self._restamp_foreign_hashes(inp, claim, pool, node_class)
        drift = find_drift(
            drift_facts(
                claim,
                pool,
                node_class,
                self.cloud,
                inp.instance_id,
                self.resolved_node_classes,
                self.instance_networks,
                self.offered_instance_types,
                datetime.now(UTC),
            )
        )
        if drift is None:
            if any(c.type == DRIFTED for c in claim.status.conditions):
                self._drop_condition(inp, DRIFTED)
            return DriftResult()
        message = f"{drift.message} (drift check {DRIFT_CHECK_VERSION})"
        if not is_true(claim.status.conditions, DRIFTED):
            self.recorder.record(claim_obj, "Normal", DRIFTED, message)
        self._set_conditions(inp, (DRIFTED, "True", drift.reason, message))
        return DriftResult(drifted=True, reason=drift.reason, message=message)

    def _restamp_foreign_hashes(
        self, ref: ClaimRef, claim: NodeClaim, pool: NodePool | None, node_class: EC2NodeClass | None
    ) -> None:
        """Stamp the claim with the current NodePool template hash and EC2NodeClass static hash where its
        stamp has another version (Karpenter's, an older nodeflow's, or none): such a hash cannot be
        compared, so, as in Karpenter, the claim is re-stamped and not found drifted."""
        annotations = claim.metadata.annotations
        stamp: dict[str, str] = {}
        if pool is not None and annotations.get(labels.NODEPOOL_HASH_VERSION_ANNOTATION) != TEMPLATE_HASH_VERSION:
            stamp |= pool.hash_annotations()
        if node_class is not None and annotations.get(labels.NODECLASS_HASH_VERSION_ANNOTATION) != STATIC_HASH_VERSION:
            stamp |= node_class.hash_annotations()
        if stamp:
            self._annotate(ref, stamp)
