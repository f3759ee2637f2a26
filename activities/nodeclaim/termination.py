"""The termination phase of a NodeClaim (Karpenter: the node termination controller and
nodeclaim/lifecycle/termination.go): mark the claim deleted, taint and drain its Node wave by wave
(scheduling.drain decides which pods go when), terminate the instance, then delete the Node and let the
NodeClaim go."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from activities import nodepool_status
from activities.heartbeat import heartbeating
from activities.metrics.labels import owner_labels
from activities.metrics.termination import observe_claim_terminated, observe_node_terminated
from activities.nodeclaim import ownership, volume_detachment
from activities.nodeclaim.base import ClaimActivities, claim_logger
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from apis import labels
from apis.meta import as_utc, get_condition, is_true, rfc3339
from apis.nodeclaim import DISRUPTION_REASON, DRAINED, EXPIRED, INSTANCE_TERMINATING, VOLUMES_DETACHED, NodeClaim
from cloudprovider.errors import InstanceNotFoundError
from kube import ops as kubeops
from kube import resources as r
from kube.errors import KubeError, NotFoundError, TooManyRequestsError
from kube.types import Obj
from scheduling import drain

log = logging.getLogger(__name__)
EXCLUDED_BY = "karpenter"  # the exclude-from-external-load-balancers label's value, Karpenter's
EXPIRED_REASON = "expired"  # karpenter_nodeclaims_disrupted_total's reason for an expired NodeClaim
# karpenter_pods_drained_total's reason for pods of a claim with no disruption reason (Karpenter's words)
FORCEFUL_TERMINATION = "Forceful Termination"
EVICTED_CODE = "200"  # karpenter_pods_eviction_requests_total's code for an eviction the API accepted
FAILED_DRAINING_EVERY = 120.0  # s between FailedDraining events of one node (Karpenter's event dedupe window)


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
    """`begin_termination`, `drain_step`, `terminate_instance`, `finalize`. Records Karpenter's termination
    Events: `Evicted` on each pod evicted, `Disrupted` on each pod deleted for terminationGracePeriod,
    `FailedDraining` (Warning) on a Node with pods still to drain (at most every FAILED_DRAINING_EVERY per
    node and worker), `AwaitingVolumeDetachment` (Warning) and `TerminationGracePeriodExpiring` (Warning)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._failed_draining_at: dict[str, float] = {}  # node name -> monotonic time of its last FailedDraining
        self._failed_draining_lock = threading.Lock()

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
            if ownership.delete(self.kube, self._own_claim(inp)):
                why = inp.reason or "deleted"
                claim_logger(log, inp, self._pool_of(claim_obj)).info("terminating NodeClaim %s: %s", inp.name, why)
                if inp.expired:
                    owner = owner_labels(claim_obj["metadata"].get("labels") or {})
                    self.metrics.nodeclaims_disrupted.labels(reason=EXPIRED_REASON, **owner).inc()

    @activity.defn(name="drain_step")
    def drain_step(self, inp: DrainInput) -> DrainProgress:
        """One pass of a drain: taint the node `karpenter.sh/disrupted:NoSchedule`, evict the next wave of
        pods (a PDB refusal is counted, not raised), and report how many drainable pods remain.
        With a `deadline` (drain start + terminationGracePeriod) it is recorded once on the NodeClaim as
        `karpenter.sh/nodeclaim-termination-timestamp`, and each pod whose deadline - grace period has come
        is deleted (event `Disrupted`), bypassing PDBs and do-not-disrupt. With `force` (the deadline
        passed) the rest of the wave is deleted too. The step that finds the node drained (Drained turns
        True) counts it in `karpenter_nodes_drained_total`; each pod evicted or deleted counts in
        `karpenter_pods_drained_total`. Heartbeats."""
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
        if evicted or deleted:
            self.metrics.pods_drained.labels(reason=self._drain_reason(inp)).inc(evicted + deleted)
        left = self.kube.list(r.POD, field_selector=f"spec.nodeName={inp.node_name}")
        remaining = len(drain.drainable(left, datetime.now(UTC)))
        held = len(plan.held)
        message = f"{remaining} pods remaining, {refused} refused by disruption budgets, {held} held by do-not-disrupt"
        if deleted:
            message += f", {deleted} deleted for terminationGracePeriod"
        if remaining == 0:
            claim = self._claim(inp)
            self._set_conditions(inp, (DRAINED, "True", "Drained", "all drainable pods are gone"))
            if claim is not None and not is_true(claim.status.conditions, DRAINED):
                pool = self._pool_of(claim)
                self.metrics.nodes_drained.labels(nodepool=pool).inc()
                claim_logger(log, inp, pool).info("drained node %s of NodeClaim %s", inp.node_name, inp.name)
            return self._await_volume_detachment(inp, node, left, claim, evicted, deleted)
        self._set_conditions(inp, (DRAINED, "False", "Draining", message))
        self._failed_draining(node, message)
        return DrainProgress(
            remaining=remaining, evicted=evicted, deleted=deleted, blocked_by_pdb=refused + held, message=message
        )

    def _failed_draining(self, node: Obj, message: str) -> None:
        """Karpenter's `FailedDraining` Warning on the Node while pods are left to drain, once per
        FAILED_DRAINING_EVERY for each node."""
        name, now = str(node["metadata"].get("name", "")), time.monotonic()
        with self._failed_draining_lock:
            last = self._failed_draining_at.get(name)
            if last is not None and now - last < FAILED_DRAINING_EVERY:
                return
            self._failed_draining_at[name] = now
            for gone in [n for n, at in self._failed_draining_at.items() if now - at >= FAILED_DRAINING_EVERY]:
                if gone != name:
                    del self._failed_draining_at[gone]
        self.recorder.record(node, "Warning", "FailedDraining", f"Failed to drain node, {message}")

    def _await_volume_detachment(
        self, inp: DrainInput, node: Obj, left: list[Obj], claim: NodeClaim | None, evicted: int, deleted: int
    ) -> DrainProgress:
        """The drained node's volumes (activities.nodeclaim.volume_detachment): while one it waits for is still
        attached, the claim's VolumesDetached is False (AwaitingVolumeDetachment, with an Event on the Node
        when the wait begins) and the step reports them remaining, so the drain goes on. Once
        terminationGracePeriod has passed (`force`) they are waited for no more."""
        waiting = volume_detachment.read_awaited(self.kube, inp.node_name, left, datetime.now(UTC))
        if not waiting:
            self._set_conditions(inp, (VOLUMES_DETACHED, "True", "VolumesDetached", ""))
            return DrainProgress(remaining=0, evicted=evicted, deleted=deleted, message="drained")
        names = ", ".join(sorted(waiting)[:5]) + (f" and {len(waiting) - 5} more" if len(waiting) > 5 else "")
        if inp.force:
            message = f"terminationGracePeriod is over: not waiting for VolumeAttachments {names}"
            self._set_conditions(inp, (VOLUMES_DETACHED, "False", "TerminationGracePeriodElapsed", message))
            return DrainProgress(remaining=0, evicted=evicted, deleted=deleted, message=message)
        message = f"awaiting deletion of {len(waiting)} VolumeAttachments ({names})"
        current = get_condition(claim.status.conditions, VOLUMES_DETACHED) if claim is not None else None
        if current is None or current.reason != "AwaitingVolumeDetachment":
            self.recorder.record(node, "Warning", "AwaitingVolumeDetachment", message)
        self._set_conditions(inp, (VOLUMES_DETACHED, "False", "AwaitingVolumeDetachment", message))
        return DrainProgress(remaining=len(waiting), evicted=evicted, deleted=deleted, message=message)

    def _evict_pods(self, pods: list[Obj]) -> tuple[int, int]:
        """Evict each pod through the Eviction API, with an `Evicted` event on each one evicted; returns
        (evicted, refused by a PDB). Gone is fine. Each request counts in
        `karpenter_pods_eviction_requests_total` by its response code (200 when it succeeded)."""
        evicted = refused = 0
        requests = self.metrics.pods_eviction_requests
        for pod in pods:
            try:
                self.kube.evict(pod["metadata"].get("namespace", "default"), pod["metadata"]["name"])
            except TooManyRequestsError as err:  # a PodDisruptionBudget refuses for now: the next step retries
                requests.labels(code=str(err.status)).inc()
                refused += 1
                continue
            except NotFoundError as err:
                requests.labels(code=str(err.status)).inc()
                continue
            except KubeError as err:
                if err.status:  # an answer from the API server, not a broken connection
                    requests.labels(code=str(err.status)).inc()
                raise
            requests.labels(code=EVICTED_CODE).inc()
            self.recorder.record(pod, "Normal", "Evicted", "Evicted pod")
            evicted += 1
        return evicted, refused

    def _drain_reason(self, ref: ClaimRef) -> str:
        """`karpenter_pods_drained_total`'s reason, as Karpenter's: the reason of the claim's DisruptionReason
        condition when it is True, else FORCEFUL_TERMINATION (an expiry, an interruption, a deletion)."""
        claim = self._claim(ref)
        condition = get_condition(claim.status.conditions, DISRUPTION_REASON) if claim is not None else None
        if condition is not None and condition.status == "True" and condition.reason:
            return condition.reason
        return FORCEFUL_TERMINATION

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
        """Taint the Node `karpenter.sh/disrupted:NoSchedule` and label it
        `node.kubernetes.io/exclude-from-external-load-balancers=karpenter`, as Karpenter's termination does,
        so that cloud load balancers stop sending it traffic before its pods go; None when it is gone or not
        ours."""
        taint = kubeops.adding_taint(labels.DISRUPTED_TAINT_KEY, "NoSchedule")

        def mutate(node: Obj) -> bool:
            node_labels = node.setdefault("metadata", {}).setdefault("labels", {})
            labelled = labels.EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS not in node_labels
            if labelled:
                node_labels[labels.EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = EXCLUDED_BY
            return taint(node) or labelled

        return ownership.update(self.kube, owned, mutate)

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
        controller's next round (activities.disruption.decision). The call that removes the Node's finalizer counts
        it terminated and times its termination and lifetime; the call that removes the NodeClaim's counts
        it in `karpenter_nodeclaims_terminated_total` and times its termination and its instance's."""
        claim = self._own_claim(ident)
        claim_obj = ownership.get(self.kube, claim)  # its deletion may have begun the Node's termination
        if ident.node_name:
            node = self._own_node(ident)
            ownership.delete(self.kube, node)
            node_obj = self._remove_termination_finalizer(node)
            if node_obj is not None:
                observe_node_terminated(self.metrics, node_obj, claim_obj)
                claim_logger(log, ident, self._pool_of(claim_obj)).info("deleted node %s", ident.node_name)
        ownership.delete(self.kube, claim)
        last = self._remove_termination_finalizer(claim)
        if last is not None:
            observe_claim_terminated(self.metrics, last)
            claim_logger(log, ident, self._pool_of(last)).info("deleted NodeClaim %s", ident.name)

    def _remove_termination_finalizer(self, owned: ownership.Owned) -> Obj | None:
        """Drop the termination finalizer: the object as this call left it when it removed the finalizer,
        None when another call had (a retry), or the object is gone or not ours."""
        removed = False
        drop = kubeops.dropping_finalizer(labels.TERMINATION_FINALIZER)

        def mutate(obj: Obj) -> bool:  # runs again on a conflict: `removed` is the last attempt's
            nonlocal removed
            removed = drop(obj)
            return removed

        try:
            last = ownership.update(self.kube, owned, mutate)
        except NotFoundError:
            return None
        return last if removed else None
