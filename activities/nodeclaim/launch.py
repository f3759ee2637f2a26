"""The launch phase of a NodeClaim (Karpenter: nodeclaim/lifecycle/launch.go): create (or adopt) the
claim's instance and record it on the claim, in one activity (one command in the workflow's history), or
say why it cannot launch and delete the claim."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.nodeclaim import ownership
from activities.nodeclaim import translate as claims
from activities.nodeclaim.base import ClaimActivities
from activities.nodeclaim.models import ClaimRef
from apis import labels
from apis.ec2nodeclass import EC2NodeClass
from apis.errors import describe_validation_error, format_problems
from apis.meta import is_true
from apis.nodeclaim import LAUNCH_FAILED, LAUNCHED, NodeClaim
from apis.values.quantity import format_resource_list
from cloudprovider.errors import (
    CloudProviderError,
    InstanceNotFoundError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from cloudprovider.types import Instance
from kube import resources as r
from kube.errors import NotFoundError
from kube.types import Obj
from scheduling.provisioning.catalog import node_class_os

# A launch failure's Event reason where Karpenter's differs from the failure (the Launched condition's reason).
EVENT_REASONS = {"InsufficientCapacity": "InsufficientCapacityError"}


class LaunchOutcome(BaseModel):
    """Result of a launch attempt. `failure` is set (and `instance_id` empty) when the claim cannot launch:
    'InsufficientCapacity', 'NodeClassNotReady', 'InvalidNodeClaim' or 'NodeClaimGone'."""

    instance_id: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    capacity_reservation_id: str = ""  # a reserved instance's capacity reservation
    capacity_reservation_type: str = ""  # default | capacity-block
    placement_group_id: str = ""  # the placement group the instance runs in
    placement_group_partition: str = ""  # its partition in a partition placement group
    provider_id: str = ""
    image_id: str = ""
    node_pool: str = ""
    claim_deleting: bool = False  # the claim was deleted while launching: terminate what launched
    failure: str = ""
    message: str = ""


class MarkLaunchedInput(ClaimRef):
    launch: LaunchOutcome


class LaunchFailedInput(ClaimRef):
    """Why the claim cannot launch: `failure` is the event and condition reason, `message` says more."""

    failure: str
    message: str


class LaunchActivities(ClaimActivities):
    """`launch` (which records what launched: `mark_launched`), `launch_failed`."""

    @property
    def activities(self) -> list[Callable[..., Any]]:
        return [self.launch, self.launch_failed]

    @activity.defn(name="launch")
    def launch(self, ref: ClaimRef) -> LaunchOutcome:
        """Launch (or adopt) the claim's instance, then record it on the claim (`mark_launched`) unless the
        claim is being deleted. Insufficient capacity and an unready node class are outcomes; throttling
        and 5xx raise and are retried by Temporal (a retry adopts the instance that did launch).
        Heartbeats throughout."""
        with heartbeating():
            outcome = self._launch(ref)
            if not outcome.failure and not outcome.claim_deleting:
                self.mark_launched(MarkLaunchedInput(**ref.model_dump(), launch=outcome))
            return outcome

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
            raise ApplicationError(str(err), type=LAUNCH_FAILED, non_retryable=True) from err
        return self._outcome(instance, claim)

    @staticmethod
    def _outcome(instance: Instance, claim: NodeClaim | None) -> LaunchOutcome:
        return LaunchOutcome(
            instance_id=instance.id,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            capacity_reservation_id=instance.capacity_reservation_id,
            capacity_reservation_type=instance.capacity_reservation_type,
            placement_group_id=instance.placement_group_id,
            placement_group_partition=instance.placement_group_partition,
            provider_id=instance.provider_id,
            image_id=instance.image_id,
            node_pool=(claim.metadata.labels.get(labels.NODEPOOL, "") if claim else "")
            or instance.tags.get(labels.NODEPOOL, ""),
        )

    def mark_launched(self, inp: MarkLaunchedInput) -> None:
        """Part of `launch`: record the instance on the claim: labels of the chosen type and offering, the
        EC2NodeClass static hash (NodeClassDrift), providerID, imageID, capacity and allocatable,
        condition Launched (the call that sets it times the launch from the claim's creation)."""
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
            capacity_reservation_id=launch.capacity_reservation_id,
            capacity_reservation_type=launch.capacity_reservation_type,
            placement_group_id=launch.placement_group_id,
            placement_group_partition=launch.placement_group_partition,
        )
        zone_ids = {s.zone: s.zone_id for s in node_class.status.subnets if s.zone_id} if node_class else {}
        os_labels = node_class_os(node_class) if node_class is not None else ("linux", None)
        new_labels = claims.launched_labels(instance, type_info.labels if type_info else {}, zone_ids, os_labels)
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
        if not is_true(claim.status.conditions, LAUNCHED):
            self._observe_startup(claim, LAUNCHED)

    @activity.defn(name="launch_failed")
    def launch_failed(self, inp: LaunchFailedInput) -> None:
        """The claim cannot launch: say why (event and condition) and delete it, so its pods go back to the
        provisioner. Any instance that did start for it is terminated first."""
        if self._foreign_claim(inp):
            return  # the name is another claim's now: its instance and object are not ours to touch
        claim_obj = self._claim_obj(inp)
        if claim_obj is not None:
            reason = EVENT_REASONS.get(inp.failure, inp.failure)
            self.recorder.record(claim_obj, "Warning", reason, inp.message)
            self._set_conditions(inp, (LAUNCHED, "False", inp.failure, inp.message))
        leftover = self.cloud.find_by_node_claim(inp.name)
        if leftover is not None:
            try:
                self.cloud.delete(leftover.id)
            except InstanceNotFoundError:
                pass
        ownership.delete(self.kube, self._own_claim(inp))
        ownership.remove_finalizer(self.kube, self._own_claim(inp), labels.TERMINATION_FINALIZER)
