"""NodePool and EC2NodeClass status, as provisioning needs it: each EC2NodeClass validated and resolved
(what its selectors resolve to, its Ready condition, its finalizer, its termination once deleted), each
NodePool validated against it (ValidationSucceeded, NodeClassReady and Ready, as Karpenter sets them),
with a Warning Event for each new problem. One bad object is reported on its own status and left out;
the others are ready for the scheduler. Used by every provisioning round
(activities.provisioning.provisioner `solve`) and by the leader's status refresh
(activities.provisioning.status_refresh), whether or not a pod is pending."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from activities.provisioning import nodeclass_status
from activities.provisioning.models import InvalidObject
from activities.provisioning.nodeclass_termination import NodeClassTermination, is_terminating
from apis.ec2nodeclass import EC2NodeClass, EC2NodeClassStatus
from apis.errors import describe_validation_error, format_problems
from apis.meta import Condition, get_condition, now_rfc3339, set_condition
from apis.nodepool import NodePool, is_managed, node_class_ref
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError, PartReadiness
from cloudprovider.types import CloudProvider, ResolvedNodeClass
from kube import ops as kubeops
from kube import resources as r
from kube.errors import NotFoundError
from kube.types import Kube, Obj

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReadyObjects:
    """What `ProvisioningStatus.refresh` found: the ready EC2NodeClasses (with the status just written),
    the zones where they have subnets, the NodePools the scheduler sees (each with its Ready condition as
    of now), and every invalid or not-ready object."""

    node_classes: list[EC2NodeClass]
    zones: set[str]
    node_pools: list[NodePool]
    invalid: list[InvalidObject]


class ProvisioningStatus:
    """See the module docstring."""

    def __init__(self, kube: Kube, cloud: CloudProvider, recorder: kubeops.Recorder) -> None:
        self.kube = kube
        self.cloud = cloud
        self.recorder = recorder
        self.termination = NodeClassTermination(kube, cloud)

    def refresh(self) -> ReadyObjects:
        """Validate and resolve every EC2NodeClass and NodePool and bring their status up to date: the
        EC2NodeClass's resolved selectors and conditions, its finalizer and termination; each NodePool's
        ValidationSucceeded, NodeClassReady and Ready conditions as Karpenter sets them; a Warning Event
        when a problem appears or changes. Writes only what changed. What a provisioning round does
        before it schedules, whether or not a pod is pending. Raises only for infrastructure failures."""
        invalid: list[InvalidObject] = []
        generations: dict[str, int] = {}
        node_classes, zones, class_problems = self._ready_node_classes(invalid, generations)
        listed_pools = self.kube.list(r.NODEPOOL)
        node_pools = self._node_pools(listed_pools, invalid, {nc.name for nc in node_classes}, class_problems)
        self._report_node_pools(listed_pools, invalid, generations)
        return ReadyObjects(node_classes=node_classes, zones=zones, node_pools=node_pools, invalid=invalid)

    def _ready_node_classes(
        self, invalid: list[InvalidObject], generations: dict[str, int]
    ) -> tuple[list[EC2NodeClass], set[str], dict[str, str]]:
        """Validate and resolve every EC2NodeClass, keeping its status current (what its selectors resolve
        to, and Ready) and its termination finalizer on (activities.provisioning.nodeclass_termination). One being
        deleted is not ready: it is finalized once no NodeClaim references it. Returns the ready ones
        (carrying the status just written), the zones where they have subnets, and the problem of each
        one that is not ready, by name; fills `generations` with every one's metadata.generation."""
        ready: list[EC2NodeClass] = []
        zones: set[str] = set()
        problems: dict[str, str] = {}
        claims: list[Obj] | None = None
        for listed in self.kube.list(r.EC2NODECLASS):
            name = listed.get("metadata", {}).get("name", "")
            if isinstance(generation := listed.get("metadata", {}).get("generation"), int):
                generations[name] = generation
            if is_terminating(listed):
                claims = self.kube.list(r.NODECLAIM) if claims is None else claims
                reason, problem = self.termination.finalize(listed, claims)
                if problem:
                    self._report_node_class(listed, None, problem, reason)
                problems[name] = problem or f"EC2NodeClass {name} is being deleted"
                invalid.append(
                    InvalidObject(
                        kind="EC2NodeClass", name=name, message=problems[name], reason=reason or "NodeClassTerminating"
                    )
                )
                continue
            obj = self.termination.ensure_finalizer(listed)  # before resolving creates its instance profile
            if obj is None:
                continue  # deleted meanwhile
            node_class, resolved, problem, reason, parts = self._resolve_node_class(obj)
            desired = self._report_node_class(obj, resolved, problem, reason, parts)
            if node_class is None or resolved is None:
                problems[name] = problem
                invalid.append(InvalidObject(kind="EC2NodeClass", name=name, message=problem, reason=reason))
                continue
            zones.update(s["zone"] for s in resolved.subnets if s.get("zone"))
            ready.append(node_class.model_copy(update={"status": EC2NodeClassStatus.model_validate(desired)}))
        return ready, zones, problems

    def _resolve_node_class(
        self, obj: Obj
    ) -> tuple[EC2NodeClass | None, ResolvedNodeClass | None, str, str, dict[str, PartReadiness]]:
        """(model, resolution, problem, reason, the readiness of each part looked at) of one EC2NodeClass;
        problem is '' when it is ready. Any failure of this one object becomes its problem, except a
        retryable cloud error, which is raised."""
        name = obj.get("metadata", {}).get("name", "")
        try:
            node_class = EC2NodeClass.model_validate(obj)
        except ValidationError as err:
            return None, None, _problems("EC2NodeClass", name, err), "ValidationFailed", {}
        try:
            resolved = self.cloud.resolve_node_class(node_class)
            return node_class, resolved, "", "", resolved.conditions
        except NodeClassNotReadyError as err:
            return node_class, None, str(err), "NodeClassNotReady", err.conditions
        except CloudProviderError as err:
            if err.retryable:
                raise
            return node_class, None, f"EC2NodeClass {name}: {err}", "NodeClassNotReady", {}
        except Exception as err:  # a defect resolving one node class must not stop the others
            log.exception("resolving EC2NodeClass %s failed", name)
            return node_class, None, f"EC2NodeClass {name}: cannot be resolved: {err}", "NodeClassNotReady", {}

    def _report_node_class(
        self,
        obj: Obj,
        resolved: ResolvedNodeClass | None,
        problem: str,
        reason: str,
        parts: dict[str, PartReadiness] | None = None,
    ) -> Obj:
        """Patch the EC2NodeClass status when it changed; a Warning Event when it turns not ready or its
        problem changes. Returns the status as it now should be."""
        current = obj.get("status") or {}
        desired = nodeclass_status.desired_status(
            current,
            resolved,
            problem,
            now_rfc3339(),
            reason or "NodeClassNotReady",
            generation=obj["metadata"].get("generation"),
            parts=parts,
        )
        if desired == current:
            return desired
        before: dict[str, Any] = next((c for c in current.get("conditions") or [] if c.get("type") == "Ready"), {})
        if problem and (before.get("status") != "False" or before.get("message") != problem):
            self.recorder.record(obj, "Warning", reason, problem)
        try:
            self.kube.patch(r.EC2NODECLASS, obj["metadata"]["name"], {"status": desired}, subresource="status")
        except NotFoundError:
            pass
        return desired

    def _node_pools(
        self, listed: list[Obj], invalid: list[InvalidObject], ready_classes: set[str], class_problems: dict[str, str]
    ) -> list[NodePool]:
        """The NodePools the scheduler sees, each with a Ready condition as of now: valid ones whose node
        class is ready (Ready=True), and those whose node class is not ready or missing (Ready=False, so the
        scheduler names them in the reasons of pods only they could take; they launch nothing). Invalid
        NodePools are left out. Both kinds of problem go to `invalid`, which `_report_node_pools` reports."""
        pools: list[NodePool] = []
        stamp = now_rfc3339()
        for obj in listed:
            name = obj.get("metadata", {}).get("name", "")
            if obj.get("metadata", {}).get("deletionTimestamp") or not is_managed(obj):
                continue
            try:
                pool = NodePool.model_validate(obj)
            except ValidationError as err:
                invalid.append(InvalidObject(kind="NodePool", name=name, message=_problems("NodePool", name, err)))
                continue
            ref = pool.spec.template.spec.node_class_ref.name
            message, reason = "", "Ready"
            if ref in class_problems:
                reason = "NodeClassNotReady"
                detail = class_problems[ref].removeprefix(f"EC2NodeClass {ref}: ")
                message = f'spec.template.spec.nodeClassRef: EC2NodeClass "{ref}" is not ready: {detail}'
            elif ref not in ready_classes:
                reason = "NodeClassNotFound"
                message = (
                    f'spec.template.spec.nodeClassRef: EC2NodeClass "{ref}" not found; apply it or fix '
                    "nodeClassRef.name"
                )
            if message:
                invalid.append(InvalidObject(kind="NodePool", name=name, message=message, reason=reason))
            status = "False" if message else "True"
            conditions = set_condition(pool.status.conditions, "Ready", status, reason, message, stamp)  # type: ignore[arg-type]
            pools.append(pool.model_copy(update={"status": pool.status.model_copy(update={"conditions": conditions})}))
        return pools

    def _report_node_pools(self, listed: list[Obj], invalid: list[InvalidObject], generations: dict[str, int]) -> None:
        """NodePool conditions as Karpenter sets them, with an Event when a problem appears or changes:
        an invalid NodePool gets ValidationSucceeded=False (NodePoolValidationFailed, Karpenter's reason)
        and Ready=False (ValidationFailed); one whose
        EC2NodeClass is not ready or missing gets NodeClassReady=False and Ready=False with that reason;
        the others get all three True. Where its EC2NodeClass exists, `status.nodeClassObservedGeneration`
        is that node class's metadata.generation, as Karpenter's NodePool readiness controller records it."""
        problems = {i.name: i for i in invalid if i.kind == "NodePool"}
        stamp = now_rfc3339()
        for obj in listed:
            if not is_managed(obj):
                continue
            name = obj["metadata"]["name"]
            problem = problems.get(name)
            message = problem.message if problem else ""
            reason = (problem.reason or "ValidationFailed") if problem else "Ready"
            if reason == "ValidationFailed":  # the node class is not looked at: NodeClassReady stays as it was
                wanted = [("ValidationSucceeded", "False", VALIDATION_FAILED, message)]
            else:
                wanted = [
                    ("ValidationSucceeded", "True", "Ready", ""),
                    ("NodeClassReady", "False" if problem else "True", reason, message),
                ]
            wanted.append(("Ready", "False" if problem else "True", reason, message))
            ref = node_class_ref(obj).get("name")
            generation = generations.get(ref) if isinstance(ref, str) else None
            conditions = [Condition.model_validate(c) for c in obj.get("status", {}).get("conditions") or []]
            if all(_has(conditions, *want) for want in wanted) and _observed(obj, generation):
                continue
            current = get_condition(conditions, "Ready")
            if message and not (current and current.status == "False" and current.message == message):
                self.recorder.record(obj, "Warning", reason, message)
            kubeops.update(self.kube, r.NODEPOOL, name, _setting(wanted, stamp, generation), subresource="status")


# Karpenter's reason on a NodePool's ValidationSucceeded=False (its Ready keeps nodeflow's ValidationFailed,
# with the message naming each field).
VALIDATION_FAILED = "NodePoolValidationFailed"


def _setting(wanted: list[tuple[str, str, str, str]], stamp: str, generation: int | None) -> Callable[[Obj], bool]:
    """A status mutation for `kubeops.update` setting these NodePool conditions (type, status, reason,
    message) and, when not None, `nodeClassObservedGeneration` on the object as read, so a condition
    another writer set meanwhile (NodeRegistrationHealthy) is kept; False when they are already so."""

    def mutate(obj: Obj) -> bool:
        status = obj.setdefault("status", {})
        conditions = [Condition.model_validate(c) for c in status.get("conditions") or []]
        if all(_has(conditions, *want) for want in wanted) and _observed(obj, generation):
            return False
        for type_, state, why, text in wanted:
            conditions = set_condition(conditions, type_, state, why, text, stamp)  # type: ignore[arg-type]
        status["conditions"] = [c.to_kube() for c in conditions]
        if generation is not None:
            status["nodeClassObservedGeneration"] = generation
        return True

    return mutate


def _observed(obj: Obj, generation: int | None) -> bool:
    """Whether the NodePool's status already records `generation` of its node class (None: nothing to record)."""
    return generation is None or (obj.get("status") or {}).get("nodeClassObservedGeneration") == generation


def _has(conditions: list[Condition], type_: str, status: str, reason: str, message: str) -> bool:
    """Whether the condition is already set to exactly this."""
    current = get_condition(conditions, type_)
    return current is not None and (current.status, current.reason, current.message) == (status, reason, message)


def _problems(kind: str, name: str, err: ValidationError) -> str:
    """One line naming each bad field in Kubernetes form, for status conditions and events."""
    model = NodePool if kind == "NodePool" else EC2NodeClass
    return format_problems(describe_validation_error(kind, name, err, model=model))
