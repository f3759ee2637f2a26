"""NodeClaim lifecycle activities: thin adapters from a payload to the cloud and Kubernetes boundaries.

Every activity is idempotent (a retry after a crash at any line converges) and synchronous (run in the
worker's thread pool). Expected outcomes (insufficient capacity, a PDB refusal, a node not there yet) are
results, not exceptions; exceptions mean "retry me" unless they are non-retryable ApplicationErrors.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import claims, drain, kubeops, ownership, replace
from activities.drift import (
    DRIFT_CHECK_VERSION,
    InstanceNetworks,
    OfferedInstanceTypes,
    ResolvedNodeClasses,
    drift_facts,
)
from activities.heartbeat import heartbeating
from activities.models import (
    ClaimIdentity,
    ClaimRef,
    ClaimState,
    DrainInput,
    DrainProgress,
    DriftCheckInput,
    DriftResult,
    FinalizeInput,
    InitializationResult,
    LaunchFailedInput,
    LaunchOutcome,
    MarkLaunchedInput,
    NodeRef,
    RegistrationCheck,
    ReplacementInput,
    ReplacementResult,
    ReplacementState,
    RunningCheck,
    TerminateInput,
    TerminateResult,
)
from activities.shared_reads import SharedReads
from apis import labels
from apis.ec2nodeclass import STATIC_HASH_VERSION, EC2NodeClass
from apis.errors import describe_validation_error, format_problems
from apis.meta import is_true, set_condition
from apis.nodeclaim import (
    DRAINED,
    DRIFTED,
    EXPIRED,
    INITIALIZED,
    INSTANCE_TERMINATING,
    LAUNCHED,
    READY,
    REGISTERED,
    NodeClaim,
)
from apis.nodepool import TEMPLATE_HASH_VERSION, NodePool
from apis.quantity import format_resource_list
from cloudprovider.errors import (
    CloudProviderError,
    InstanceNotFoundError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from cloudprovider.types import CloudProvider, Instance
from kube import resources as r
from kube.errors import AlreadyExistsError, NotFoundError, TooManyRequestsError
from kube.types import Kube, Obj
from scheduling.drift import find_drift

log = logging.getLogger(__name__)


def now_rfc3339() -> str:
    return rfc3339(datetime.now(UTC))


def as_utc(moment: datetime) -> datetime:
    """The moment as a timezone-aware UTC datetime (a naive one is taken to be UTC already)."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def rfc3339(moment: datetime) -> str:
    """RFC3339 in UTC to the second, as Kubernetes writes timestamps."""
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def disrupted_message(pod: Obj, deadline: datetime | None, clamped_grace: int | None = None) -> str:
    """The `Disrupted` event of a pod deleted for terminationGracePeriod (EV-03); `clamped_grace` is the
    shortened grace period it was deleted with, if any."""
    own = drain.grace_seconds(pod)
    cut = f", cut to {clamped_grace}s" if clamped_grace is not None else ""
    grace = f"terminationGracePeriodSeconds {own}s{cut}"
    by = f"by the node's termination time {rfc3339(deadline)}" if deadline else "now the node's grace period is over"
    return f"deleting the pod ({grace}) to end {by}, bypassing PodDisruptionBudgets and karpenter.sh/do-not-disrupt"


class NodeClaimActivities:
    """Activities of the NodeClaim workflow. Construct with the boundaries (the composition root does)."""

    def __init__(self, kube: Kube, cloud: CloudProvider, recorder: kubeops.Recorder, cluster_name: str) -> None:
        self.kube = kube
        self.cloud = cloud
        self.recorder = recorder
        self.cluster_name = cluster_name
        self.resolved_node_classes = ResolvedNodeClasses(cloud)
        self.instance_networks = InstanceNetworks(cloud)
        self.offered_instance_types = OfferedInstanceTypes(cloud)
        self.shared_reads = SharedReads(kube)

    # -- reading -----------------------------------------------------------------------------------------

    @staticmethod
    def _own_claim(ref: ClaimRef) -> ownership.Owned:
        return ownership.node_claim(ref.name, ref.uid)

    @staticmethod
    def _own_node(ident: ClaimIdentity, node_name: str = "") -> ownership.Owned:
        return ownership.node(node_name or ident.node_name, ident.provider_id, ident.node_uid)

    def _claim_obj(self, ref: ClaimRef) -> Obj | None:
        """The claim's NodeClaim, or None when it is gone or the name is another claim's."""
        return ownership.get(self.kube, self._own_claim(ref))

    def _foreign_claim(self, ref: ClaimRef) -> str:
        """Why the NodeClaim named `ref.name` is another claim's (same name, other uid); '' when it is this
        claim's or gone. Instances tagged with the name then belong to that other claim."""
        obj = kubeops.get_or_none(self.kube, r.NODECLAIM, ref.name)
        mismatch = self._own_claim(ref).mismatch(obj) if obj is not None else ""
        return f"{mismatch}: another NodeClaim with this name; this one no longer exists" if mismatch else ""

    def _claim(self, ref: ClaimRef) -> NodeClaim | None:
        obj = self._claim_obj(ref)
        return NodeClaim.model_validate(obj) if obj is not None else None

    def _set_conditions(self, ref: ClaimRef, *updates: tuple[str, str, str, str], **status: Any) -> None:
        """Set status conditions (type, status, reason, message) and other status fields on the claim."""
        stamp = now_rfc3339()

        def mutate(obj: Obj) -> bool:
            claim = NodeClaim.model_validate(obj)
            conditions = claim.status.conditions
            for type_, state, reason, message in updates:
                conditions = set_condition(conditions, type_, state, reason, message, stamp)  # type: ignore[arg-type]
            new_status = claim.status.model_copy(update={"conditions": conditions, **status})
            new = new_status.to_kube()
            if new == obj.get("status"):
                return False
            obj["status"] = new
            return True

        ownership.update(self.kube, self._own_claim(ref), mutate, subresource="status")

    def _drop_condition(self, ref: ClaimRef, type_: str) -> None:
        def mutate(obj: Obj) -> bool:
            conditions = (obj.get("status") or {}).get("conditions") or []
            kept = [c for c in conditions if c.get("type") != type_]
            if len(kept) == len(conditions):
                return False
            obj["status"]["conditions"] = kept
            return True

        ownership.update(self.kube, self._own_claim(ref), mutate, subresource="status")

    # -- launch ------------------------------------------------------------------------------------------

    @activity.defn(name="launch")
    def launch(self, ref: ClaimRef) -> LaunchOutcome:
        """Launch (or adopt) the claim's instance. Insufficient capacity and an unready node class are
        outcomes; throttling and 5xx raise and are retried by Temporal. Heartbeats throughout."""
        with heartbeating():
            return self._launch(ref)

    def _launch(self, ref: ClaimRef) -> LaunchOutcome:
        foreign = self._foreign_claim(ref)
        if foreign:
            return LaunchOutcome(failure="NodeClaimGone", message=foreign)
        try:
            claim = self._claim(ref)
        except ValidationError as err:
            return LaunchOutcome(
                failure="InvalidNodeClaim",
                message=format_problems(describe_validation_error("NodeClaim", ref.name, err)),
            )
        if claim is None or claim.metadata.deletion_timestamp:
            existing = self.cloud.find_by_node_claim(ref.name)
            if existing is None:
                return LaunchOutcome(failure="NodeClaimGone", message="the NodeClaim was deleted before launch")
            return self._outcome(existing, claim).model_copy(update={"claim_deleting": True})
        try:
            node_class = EC2NodeClass.model_validate(self.kube.get(r.EC2NODECLASS, claim.spec.node_class_ref.name))
        except NotFoundError:
            return LaunchOutcome(
                failure="NodeClassNotReady",
                message=f'EC2NodeClass "{claim.spec.node_class_ref.name}" does not exist',
            )
        try:
            instance = self.cloud.create(claims.launch_request(claim, node_class, self.cluster_name))
        except InsufficientCapacityError as err:
            return LaunchOutcome(failure="InsufficientCapacity", message=str(err))
        except NodeClassNotReadyError as err:
            return LaunchOutcome(failure="NodeClassNotReady", message=str(err))
        except CloudProviderError as err:
            if err.retryable:
                raise
            raise ApplicationError(str(err), type="LaunchFailed", non_retryable=True) from err
        return self._outcome(instance, claim)

    @staticmethod
    def _outcome(instance: Instance, claim: NodeClaim | None) -> LaunchOutcome:
        return LaunchOutcome(
            instance_id=instance.id,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            provider_id=instance.provider_id,
            image_id=instance.image_id,
            node_pool=(claim.metadata.labels.get(labels.NODEPOOL, "") if claim else "")
            or instance.tags.get(labels.NODEPOOL, ""),
        )

    @activity.defn(name="mark_launched")
    def mark_launched(self, inp: MarkLaunchedInput) -> None:
        """Record the instance on the claim: labels of the chosen type and offering, the EC2NodeClass static
        hash (NodeClassDrift), providerID, imageID, capacity and allocatable, condition Launched."""
        launch = inp.launch
        claim = self._claim(inp)
        if claim is None:
            return
        node_class = self.shared_reads.get(EC2NodeClass, r.EC2NODECLASS, claim.spec.node_class_ref.name, fresh=True)
        type_info = next((t for t in self.cloud.instance_types(node_class) if t.name == launch.instance_type), None)
        instance = Instance(
            id=launch.instance_id,
            instance_type=launch.instance_type,
            zone=launch.zone,
            capacity_type=launch.capacity_type,
            state="running",
            provider_id=launch.provider_id,
        )
        new_labels = claims.launched_labels(instance, type_info.labels if type_info else {})
        stamp = node_class.hash_annotations() if node_class is not None else {}

        def add_labels_and_stamp(obj: Obj) -> bool:
            meta = obj["metadata"]
            current, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
            if all(current.get(k) == v for k, v in new_labels.items()) and all(
                annotations.get(k) == v for k, v in stamp.items()
            ):
                return False
            meta["labels"], meta["annotations"] = {**current, **new_labels}, {**annotations, **stamp}
            return True

        ownership.update(self.kube, self._own_claim(inp), add_labels_and_stamp)
        capacity = dict(type_info.capacity) if type_info else {}
        allocatable = format_resource_list(type_info.allocatable()) if type_info else {}
        self._set_conditions(
            inp,
            (LAUNCHED, "True", "Launched", f"launched {launch.instance_type} in {launch.zone} ({launch.instance_id})"),
            provider_id=launch.provider_id,
            image_id=launch.image_id or None,
            capacity=capacity,
            allocatable=allocatable,
        )

    @activity.defn(name="launch_failed")
    def launch_failed(self, inp: LaunchFailedInput) -> None:
        """The claim cannot launch: say why (event and condition) and delete it, so its pods go back to the
        provisioner. Any instance that did start for it is terminated first."""
        if self._foreign_claim(inp):
            return  # the name is another claim's now: its instance and object are not ours to touch
        claim_obj = self._claim_obj(inp)
        if claim_obj is not None:
            self.recorder.record(claim_obj, "Warning", inp.failure, inp.message)
            self._set_conditions(inp, (LAUNCHED, "False", inp.failure, inp.message))
        leftover = self.cloud.find_by_node_claim(inp.name)
        if leftover is not None:
            try:
                self.cloud.delete(leftover.id)
            except InstanceNotFoundError:
                pass
        ownership.delete(self.kube, self._own_claim(inp))
        ownership.remove_finalizer(self.kube, self._own_claim(inp), labels.TERMINATION_FINALIZER)

    # -- registration and initialization -----------------------------------------------------------------

    @activity.defn(name="find_node")
    def find_node(self, check: RegistrationCheck) -> NodeRef:
        """The Node whose spec.providerID is the claim's instance (name and uid), or '' if it has not
        registered yet; `claim_gone` when the claim itself no longer exists."""
        if self._claim_obj(check) is None:
            return NodeRef(claim_gone=True)
        for node in self.kube.list(r.NODE):
            if node.get("spec", {}).get("providerID") == check.provider_id:
                return NodeRef(node_name=node["metadata"]["name"], node_uid=node["metadata"].get("uid", ""))
        return NodeRef()

    @activity.defn(name="register_node")
    def register_node(self, inp: FinalizeInput) -> None:
        """Sync the claim's labels, annotations and taints onto the Node, add the termination finalizer and
        the registered label, drop the unregistered taint; set nodeName and Registered on the claim."""
        claim = self._claim(inp)
        if claim is None:
            return
        ownership.update(self.kube, self._own_node(inp), lambda node: claims.sync_node(node, claim))
        self._set_conditions(
            inp, (REGISTERED, "True", "Registered", f"node {inp.node_name} registered"), node_name=inp.node_name
        )

    @activity.defn(name="check_initialized")
    def check_initialized(self, inp: FinalizeInput) -> InitializationResult:
        """Initialized = Ready, startup and ephemeral taints gone, requested extended resources present.
        When it is, label the Node and set Initialized and Ready on the claim."""
        claim = self._claim(inp)
        node = ownership.get(self.kube, self._own_node(inp))
        if claim is None or node is None:
            gone = self._own_claim(inp).describe() if claim is None else self._own_node(inp).describe()
            return InitializationResult(gone=True, waiting_for=f"{gone} is gone")
        blocker = claims.initialization_blocker(node, claim)
        if blocker:
            return InitializationResult(waiting_for=blocker)

        def label(obj: Obj) -> bool:
            node_labels = obj["metadata"].get("labels") or {}
            if node_labels.get(labels.INITIALIZED) == "true":
                return False
            obj["metadata"]["labels"] = {**node_labels, labels.INITIALIZED: "true"}
            return True

        ownership.update(self.kube, self._own_node(inp), label)
        self._set_conditions(
            inp,
            (INITIALIZED, "True", "Initialized", "node is ready and its startup taints are gone"),
            (READY, "True", "Ready", ""),
        )
        return InitializationResult(initialized=True)

    # -- running -----------------------------------------------------------------------------------------

    @activity.defn(name="claim_state")
    def claim_state(self, inp: FinalizeInput) -> ClaimState:
        """Whether the claim or its node is gone or being deleted (a backstop for missed signals)."""
        return self._claim_state(self._claim_obj(inp), inp)

    def _claim_state(self, claim: Obj | None, ident: ClaimIdentity) -> ClaimState:
        node = ownership.get(self.kube, self._own_node(ident)) if ident.node_name else None
        return ClaimState(
            exists=claim is not None,
            deleting=claim is None or bool(claim["metadata"].get("deletionTimestamp")),
            node_exists=node is not None,
            node_deleting=node is not None and bool(node["metadata"].get("deletionTimestamp")),
        )

    @activity.defn(name="running_check")
    def running_check(self, inp: DriftCheckInput) -> RunningCheck:
        """One cycle of the running phase in one activity (one command in the workflow's history and
        cache): `claim_state`, then `check_drift` unless the claim or its node is going away. Reads the
        claim and the node once each; the NodePool and EC2NodeClass come from the worker's shared reads."""
        claim = self._claim_obj(inp)
        result = RunningCheck(state=self._claim_state(claim, inp))
        if not result.gone and claim is not None:
            result.drift = self._check_drift(inp, claim)
        return result

    @activity.defn(name="check_drift")
    def check_drift(self, inp: DriftCheckInput) -> DriftResult:
        """Compare the claim with its NodePool, EC2NodeClass and instance (scheduling.drift) and keep the
        claim's `Drifted` condition in step: True with the reason and message while drifted, removed once
        not. Drift only marks the claim: replacing drifted nodes is the disruption controller's job. The
        NodePool and EC2NodeClass may be up to SHARED_READ_TTL_SECONDS old (activities.shared_reads)."""
        claim = self._claim_obj(inp)
        if claim is None:
            return DriftResult(claim_exists=False)
        return self._check_drift(inp, claim)

    def _check_drift(self, inp: DriftCheckInput, claim_obj: Obj) -> DriftResult:
        try:
            claim = NodeClaim.model_validate(claim_obj)
        except ValidationError:
            return DriftResult(message="the NodeClaim does not validate; drift not checked")
        pool_name = claim.metadata.labels.get(labels.NODEPOOL, "")
        reads = self.shared_reads
        pool = reads.get(NodePool, r.NODEPOOL, pool_name, fresh=inp.fresh) if pool_name else None
        node_class = reads.get(EC2NodeClass, r.EC2NODECLASS, claim.spec.node_class_ref.name, fresh=inp.fresh)
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
            self.recorder.record(claim_obj, "Normal", "Drifted", message)
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

    def _annotate(self, ref: ClaimRef, stamp: dict[str, str]) -> None:
        def mutate(obj: Obj) -> bool:
            annotations = obj["metadata"].get("annotations") or {}
            if all(annotations.get(k) == v for k, v in stamp.items()):
                return False
            obj["metadata"]["annotations"] = {**annotations, **stamp}
            return True

        ownership.update(self.kube, self._own_claim(ref), mutate)

    @activity.defn(name="create_replacement")
    def create_replacement(self, inp: ReplacementInput) -> ReplacementResult:
        """Create the replacement NodeClaim of `inp.name` (activities.replace: the original's requirements
        and resources, the rest from its NodePool's template as it is now; a name derived from the original
        and the attempt). Idempotent: an existing replacement is kept. The result carries the expireAfter
        and terminationGracePeriod the replacement's workflow must use (`from_template`)."""
        original = self._claim_obj(inp)
        if original is None or original["metadata"].get("deletionTimestamp"):
            return ReplacementResult(message=f"NodeClaim {inp.name} is gone or being deleted")
        node_pool = inp.node_pool or (original["metadata"].get("labels") or {}).get(labels.NODEPOOL, "")
        name = replace.replacement_name(inp.name, node_pool, inp.attempt)
        pool = self.shared_reads.get(NodePool, r.NODEPOOL, node_pool, fresh=True) if node_pool else None
        body = replace.replacement_body(original, name, pool)
        try:
            uid = self.kube.create(r.NODECLAIM, body)["metadata"].get("uid", "")
            self.recorder.record(original, "Normal", "Replacing", f"launching replacement NodeClaim {name}")
        except AlreadyExistsError:
            existing = kubeops.get_or_none(self.kube, r.NODECLAIM, name)  # None: gone already (failed)
            uid = existing["metadata"].get("uid", "") if existing else ""
        return ReplacementResult(
            name=name,
            uid=uid,
            message=f"replacement {name} created",
            expire_after=body["spec"].get("expireAfter"),
            termination_grace_period=body["spec"].get("terminationGracePeriod"),
            from_template=pool is not None,
        )

    @activity.defn(name="replacement_state")
    def replacement_state(self, ref: ClaimRef) -> ReplacementState:
        """Whether the replacement NodeClaim is Initialized, or gone (its launch failed)."""
        obj = kubeops.get_or_none(self.kube, r.NODECLAIM, ref.name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return ReplacementState(gone=True, message=f"replacement {ref.name} is gone")
        claim = NodeClaim.model_validate(obj)
        if is_true(claim.status.conditions, INITIALIZED):
            return ReplacementState(initialized=True, message=f"replacement {ref.name} is initialized")
        return ReplacementState(message=f"replacement {ref.name} to initialize")

    # -- drain and termination ---------------------------------------------------------------------------

    @activity.defn(name="begin_termination")
    def begin_termination(self, inp: FinalizeInput) -> None:
        """Mark the claim as being deleted (deletionTimestamp; its finalizer keeps it) and say why."""
        claim_obj = self._claim_obj(inp)
        if claim_obj is None:
            return
        if inp.expired and not is_true(NodeClaim.model_validate(claim_obj).status.conditions, EXPIRED):
            self._set_conditions(inp, (EXPIRED, "True", "Expired", inp.reason or "expired"))
        if not claim_obj["metadata"].get("deletionTimestamp"):
            if inp.reason:
                self.recorder.record(claim_obj, "Normal", "DisruptionTerminating", inp.reason)
            ownership.delete(self.kube, self._own_claim(inp))

    @activity.defn(name="drain_step")
    def drain_step(self, inp: DrainInput) -> DrainProgress:
        """One pass of a drain: taint the node `karpenter.sh/disrupted:NoSchedule`, evict the next wave of
        pods (a PDB refusal is counted, not raised), and report how many drainable pods remain.
        With a `deadline` (terminationGracePeriod, DS-16) it is recorded once on the NodeClaim as
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
            self.recorder.record(pod, "Normal", "Disrupted", disrupted_message(pod, deadline, grace))
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

        def mutate(node: Obj) -> bool:
            if kubeops.has_taint(node, labels.DISRUPTED_TAINT_KEY, "NoSchedule"):
                return False
            spec = node.setdefault("spec", {})
            spec["taints"] = [*(spec.get("taints") or []), {"key": labels.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}]
            return True

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
    def finalize(self, inp: FinalizeInput) -> None:
        """The instance is gone: delete the Node (dropping our finalizer) and let the NodeClaim go."""
        if inp.node_name:
            node = self._own_node(inp)
            ownership.delete(self.kube, node)
            ownership.remove_finalizer(self.kube, node, labels.TERMINATION_FINALIZER)
        claim = self._own_claim(inp)
        ownership.delete(self.kube, claim)
        ownership.remove_finalizer(self.kube, claim, labels.TERMINATION_FINALIZER)
