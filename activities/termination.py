"""The termination phase of a NodeClaim (Karpenter: the node termination controller and
nodeclaim/lifecycle/termination.go): mark the claim deleted, taint and drain its Node wave by wave
(activities.drain decides which pods go when), terminate the instance, then delete the Node and let the
NodeClaim go."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from activities import drain, kubeops, nodepool_status, ownership
from activities.claim_base import ClaimActivities
from activities.heartbeat import heartbeating
from activities.models import ClaimIdentity, ClaimRef
from apis import labels
from apis.meta import as_utc, is_true, rfc3339
from apis.nodeclaim import DRAINED, EXPIRED, INSTANCE_TERMINATING, NodeClaim
from cloudprovider.errors import InstanceNotFoundError
from kube import resources as r
from kube.errors import NotFoundError, TooManyRequestsError
from kube.types import Obj

EXPIRED_REASON = "expired"  # karpenter_nodeclaims_disrupted_total's reason for an expired NodeClaim


class BeginTerminationInput(ClaimIdentity):
    """Why the claim terminates (the `DisruptionTerminating` event); `expired`: set condition Expired=True
    first (expireAfter passed or the `expire` signal); `registration_failed`: its Node did not register
    within the registration TTL, so its NodePool turns NodeRegistrationHealthy=False with `reason`."""

    reason: str = ""
    expired: bool = False
    registration_failed: bool = False


class DrainInput(ClaimIdentity):
    force: bool = False  # terminationGracePeriod passed: delete the pods instead of evicting
    # drain start + terminationGracePeriod: each pod is deleted at deadline - its own grace period
    deadline: datetime | None = None


class DrainProgress(BaseModel):
    remaining: int = 0
    evicted: int = 0  # through the Eviction API
    deleted: int = 0  # deleted directly: terminationGracePeriod bypassing PDBs and do-not-disrupt
    blocked_by_pdb: int = 0
    message: str = ""


class TerminateInput(ClaimRef):
    """The claim's instance (or, when '', whichever instance is tagged for the claim). An instance tagged
    for another NodeClaim is never terminated."""

    instance_id: str


class TerminateResult(BaseModel):
    """`gone` once the instance no longer runs for this claim: terminated, unknown, or (`message` says)
    tagged for another NodeClaim, in which case it was not touched."""

    gone: bool = False
    message: str = ""


class TerminationActivities(ClaimActivities):
    """`begin_termination`, `drain_step`, `terminate_instance`, `finalize`."""

    @property
    def activities(self) -> list[Callable[..., Any]]:
        return [self.begin_termination, self.drain_step, self.terminate_instance, self.finalize]

    @activity.defn(name="begin_termination")
    def begin_termination(self, inp: BeginTerminationInput) -> None:
        """Mark the claim as being deleted (deletionTimestamp; its finalizer keeps it) and say why."""
        claim_obj = self._claim_obj(inp)
        if claim_obj is None:
            return
        if inp.registration_failed:
            message = f"NodeClaim {inp.name}: {inp.reason}" if inp.reason else f"NodeClaim {inp.name} did not register"
            nodepool_status.set_registration_health(self.kube, self._pool_of(claim_obj), False, message)
        if inp.expired and not is_true(NodeClaim.model_validate(claim_obj).status.conditions, EXPIRED):
            self._set_conditions(inp, (EXPIRED, "True", "Expired", inp.reason or "expired"))
        if not claim_obj["metadata"].get("deletionTimestamp"):
            if inp.reason:
                self.recorder.record(claim_obj, "Normal", "DisruptionTerminating", inp.reason)
            if ownership.delete(self.kube, self._own_claim(inp)) and inp.expired:
                self.metrics.nodeclaims_disrupted.labels(reason=EXPIRED_REASON, nodepool=self._pool_of(claim_obj)).inc()

    @activity.defn(name="drain_step")
    def drain_step(self, inp: DrainInput) -> DrainProgress:
        """One pass of a drain: taint the node `karpenter.sh/disrupted:NoSchedule`, evict the next wave of
        pods (a PDB refusal is counted, not raised), and report how many drainable pods remain.
        With a `deadline` (drain start + terminationGracePeriod) it is recorded once on the NodeClaim as
        `karpenter.sh/nodeclaim-termination-timestamp`, and each pod whose deadline - grace period has come
        is deleted (event `Disrupted`), bypassing PDBs and do-not-disrupt. With `force` (the deadline
        passed) the rest of the wave is deleted too. Heartbeats."""
        with heartbeating():
            return self._drain_step(inp)

    def _drain_step(self, inp: DrainInput) -> DrainProgress:
        owned = self._own_node(inp)
        node = ownership.get(self.kube, owned)
        if node is None:
            return DrainProgress(remaining=0, message=f"{owned.describe()} is gone; nothing drained")
        if self._taint_disrupted(owned) is None:  # replaced by another Node since the read above
            return DrainProgress(remaining=0, message=f"{owned.describe()} is gone; nothing drained")
        deadline = as_utc(inp.deadline) if inp.deadline else None
        if deadline is not None:
            self._annotate_termination_timestamp(inp, node, deadline)
        pods = self.kube.list(r.POD, field_selector=f"spec.nodeName={inp.node_name}")
        now = datetime.now(UTC)
        plan = drain.plan_step(pods, inp.force, deadline=deadline, now=now)
        deleted = self._delete_pods(plan.delete, deadline, now)  # first: these pods have a deadline
        evicted, refused = self._evict_pods(plan.evict)
        remaining = len(drain.drainable(self.kube.list(r.POD, field_selector=f"spec.nodeName={inp.node_name}")))
        held = len(plan.held)
        message = f"{remaining} pods remaining, {refused} refused by disruption budgets, {held} held by do-not-disrupt"
        if deleted:
            message += f", {deleted} deleted for terminationGracePeriod"
        if remaining == 0:
            self._set_conditions(inp, (DRAINED, "True", "Drained", "all drainable pods are gone"))
        else:
            self._set_conditions(inp, (DRAINED, "False", "Draining", message))
        return DrainProgress(
            remaining=remaining, evicted=evicted, deleted=deleted, blocked_by_pdb=refused + held, message=message
        )

    def _evict_pods(self, pods: list[Obj]) -> tuple[int, int]:
        """Evict each pod through the Eviction API; returns (evicted, refused by a PDB). Gone is fine."""
        evicted = refused = 0
        for pod in pods:
            try:
                self.kube.evict(pod["metadata"].get("namespace", "default"), pod["metadata"]["name"])
                evicted += 1
            except TooManyRequestsError:  # a PodDisruptionBudget refuses for now: the next step retries
                refused += 1
            except NotFoundError:
                pass
        return evicted, refused

    def _delete_pods(self, pods: list[Obj], deadline: datetime | None, now: datetime) -> int:
        """Delete each pod (terminationGracePeriod: no PDB, no do-not-disrupt) with a `Disrupted` event on
        it, its grace period cut to what is left until `deadline`; returns how many were deleted. Gone is
        fine."""
        deleted = 0
        for pod in pods:
            grace = drain.clamped_grace_seconds(pod, deadline, now)
            namespace = pod["metadata"].get("namespace", "default")
            try:
                self.kube.delete(r.POD, pod["metadata"]["name"], namespace, grace_period_seconds=grace)
            except NotFoundError:
                continue
            deleted += 1
            self.recorder.record(pod, "Normal", "Disrupted", drain.disrupted_message(pod, deadline, grace))
        return deleted

    def _annotate_termination_timestamp(self, ref: ClaimRef, node: Obj, deadline: datetime) -> None:
        """Record the deadline on the NodeClaim (`karpenter.sh/nodeclaim-termination-timestamp`, RFC3339)
        unless already there, and announce it once on the Node (`TerminationGracePeriodExpiring`)."""
        stamp = rfc3339(deadline)
        key = labels.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION
        written = False

        def mutate(obj: Obj) -> bool:  # runs again on a conflict: `written` is the last attempt's
            nonlocal written
            annotations = obj["metadata"].get("annotations") or {}
            written = key not in annotations
            if written:
                obj["metadata"]["annotations"] = {**annotations, key: stamp}
            return written

        if ownership.update(self.kube, self._own_claim(ref), mutate) is not None and written:
            message = f"all pods are deleted by {stamp}, each at that time minus its terminationGracePeriodSeconds"
            self.recorder.record(node, "Warning", "TerminationGracePeriodExpiring", message)

    def _taint_disrupted(self, owned: ownership.Owned) -> Obj | None:
        """Taint the Node `karpenter.sh/disrupted:NoSchedule`; None when it is gone or not ours."""
        return ownership.update(self.kube, owned, kubeops.adding_taint(labels.DISRUPTED_TAINT_KEY, "NoSchedule"))

    @activity.defn(name="terminate_instance")
    def terminate_instance(self, inp: TerminateInput) -> TerminateResult:
        """Ask the cloud to terminate the claim's instance; `gone` once it no longer exists (not-found is
        success). With no instance id, whatever instance is tagged with the claim is terminated."""
        foreign = self._foreign_claim(inp)
        if foreign and not inp.instance_id:  # instances tagged with the name are the other claim's
            return TerminateResult(gone=True, message=foreign)
        try:
            instance = self.cloud.get(inp.instance_id) if inp.instance_id else self.cloud.find_by_node_claim(inp.name)
        except InstanceNotFoundError:
            instance = None
        if instance is None:
            return TerminateResult(gone=True)
        if instance.node_claim != inp.name:
            owner = instance.node_claim or "no NodeClaim"
            message = f"instance {instance.id} is tagged for {owner}, not {inp.name}; not terminated"
            return TerminateResult(gone=True, message=message)
        self._set_conditions(inp, (INSTANCE_TERMINATING, "True", "InstanceTerminating", instance.id))
        try:
            self.cloud.delete(instance.id)
        except InstanceNotFoundError:
            return TerminateResult(gone=True)
        return TerminateResult(gone=False)

    @activity.defn(name="finalize")
    def finalize(self, ident: ClaimIdentity) -> None:
        """The instance is gone: delete the Node (dropping our finalizer) and let the NodeClaim go. Only the
        claim's own Node and NodeClaim are touched; the NodePool's counts follow at the disruption
        controller's next round (activities.disruption). The call that removes the NodeClaim's finalizer
        counts it in `karpenter_nodeclaims_terminated_total`."""
        if ident.node_name:
            node = self._own_node(ident)
            ownership.delete(self.kube, node)
            ownership.remove_finalizer(self.kube, node, labels.TERMINATION_FINALIZER)
        claim = self._own_claim(ident)
        ownership.delete(self.kube, claim)
        removed = False
        drop = kubeops.dropping_finalizer(labels.TERMINATION_FINALIZER)

        def mutate(obj: Obj) -> bool:  # runs again on a conflict: `removed` is the last attempt's
            nonlocal removed
            removed = drop(obj)
            return removed

        try:
            last = ownership.update(self.kube, claim, mutate)
        except NotFoundError:
            return
        if last is not None and removed:
            self.metrics.nodeclaims_terminated.labels(nodepool=self._pool_of(last)).inc()
