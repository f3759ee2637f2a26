"""Manual replaces (`nodeflow replace`, the `replace` signal) as disruption commands: the disruption
controller turns each queued request into a command of method `Manual` (`plan_manual_replacement`) and
runs it through the same steps as a consolidation or drift replace (activities.disruption.execution),
except that its replacement is launched by `launch_manual_replacements`: a copy of the original built by
scheduling.disruption.replace (the original's requirements and resources, the rest from its NodePool's template as
it is now), not a claim the scheduler planned.

Manual commands bypass budgets and consolidation policy (Karpenter's manual deletion is forceful too),
but a claim that is gone, not yet running, or already being disrupted or deleted is not replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel
from temporalio import activity

from activities.metrics.labels import disruption_reason
from activities.metrics.registry import Metrics
from activities.provisioning.claim_creation import WorkflowStarter, node_claim_name
from activities.provisioning.models import ProvisionRound
from apis import labels
from apis.nodeclaim import DISRUPTION_REASON
from apis.nodepool import NodePool
from kube import ops as kubeops
from kube import resources as r
from kube.types import Kube, Obj
from scheduling.disruption import CandidateRef, Command, replace

MANUAL: Literal["Manual"] = "Manual"  # the method and the DisruptionReason reason of a manual replace


class ManualRequest(BaseModel):
    """A queued manual replace: the NodeClaim and why (recorded as the command's message)."""

    node_claim: str
    reason: str = "manual replace"


class ManualPlan(BaseModel):
    """The command replacing the requested claim, or None and why it is not replaced (`skipped`)."""

    command: Command | None = None
    skipped: str = ""


class LaunchManualInput(BaseModel):
    """The NodeClaims to replace; `round` names their replacements deterministically (a retried launch
    finds them); `waiter`: the workflow that waits for the replacements (each one's NodeClaim workflow
    tells it once the replacement is Initialized or gone, activities.provisioning.claim_creation.WorkflowStarter)."""

    round: ProvisionRound
    names: list[str]
    waiter: str = ""


def _being_disrupted(claim: Obj, node: Obj | None) -> bool:
    conditions = (claim.get("status") or {}).get("conditions") or []
    if any(c.get("type") == DISRUPTION_REASON and c.get("status") == "True" for c in conditions):
        return True
    taints = ((node or {}).get("spec") or {}).get("taints") or []
    return any(t.get("key") == labels.DISRUPTED_TAINT_KEY for t in taints)


class ManualReplacement:
    """`plan_manual_replacement`, `launch_manual_replacements`; constructed by the composition root with
    the Kubernetes boundary, the event recorder and the NodeClaim workflow starter."""

    def __init__(
        self, kube: Kube, recorder: kubeops.Recorder, starter: WorkflowStarter, metrics: Metrics | None = None
    ) -> None:
        self.metrics = metrics or Metrics()
        self.kube = kube
        self.recorder = recorder
        self.starter = starter

    @property
    def activities(self) -> list[Callable[..., Any]]:
        return [self.plan_manual_replacement, self.launch_manual_replacements]

    @activity.defn(name="plan_manual_replacement")
    def plan_manual_replacement(self, request: ManualRequest) -> ManualPlan:
        """The `Manual` Replace command of the requested NodeClaim (message: the request's reason), or why
        there is none: the claim is gone or being deleted, has no Node yet, or is already being disrupted
        (its `DisruptionReason` condition is True or its Node carries the disrupted taint). Reads only."""
        name = request.node_claim
        claim = kubeops.get_or_none(self.kube, r.NODECLAIM, name)
        if claim is None or claim["metadata"].get("deletionTimestamp"):
            return ManualPlan(skipped=f"NodeClaim {name} is gone or being deleted")
        status = claim.get("status") or {}
        node_name = status.get("nodeName", "")
        if not status.get("providerID") or not node_name:
            return ManualPlan(skipped=f"NodeClaim {name} has no Node yet")
        node = kubeops.get_or_none(self.kube, r.NODE, node_name)
        if node is None or node["metadata"].get("deletionTimestamp"):
            return ManualPlan(skipped=f"the Node {node_name} of NodeClaim {name} is gone or being deleted")
        if _being_disrupted(claim, node):
            return ManualPlan(skipped=f"NodeClaim {name} is already being disrupted")
        node_labels = claim["metadata"].get("labels") or {}
        candidate = CandidateRef(
            node=node_name,
            node_claim=name,
            node_pool=node_labels.get(labels.NODEPOOL, ""),
            instance_type=node_labels.get(labels.INSTANCE_TYPE, ""),
            capacity_type=node_labels.get(labels.CAPACITY_TYPE, ""),
            zone=node_labels.get(labels.ZONE, ""),
        )
        command = Command(
            method=MANUAL, reason=MANUAL, action="Replace", candidates=[candidate], message=request.reason
        )
        return ManualPlan(command=command)

    @activity.defn(name="launch_manual_replacements")
    def launch_manual_replacements(self, inp: LaunchManualInput) -> list[str]:
        """Create the replacement of each named NodeClaim (scheduling.disruption.replace.replacement_body: the
        original's requirements and resources, the rest from its NodePool's template as it is now) and
        start its workflow; returns the replacements that exist, in order. An original that is gone or
        being deleted gets none. Idempotent: a retried launch finds the replacements it created."""
        launched: list[str] = []
        for original_name in inp.names:
            original = kubeops.get_or_none(self.kube, r.NODECLAIM, original_name)
            if original is None or original["metadata"].get("deletionTimestamp"):
                continue
            pool_name = (original["metadata"].get("labels") or {}).get(labels.NODEPOOL, "")
            pool_obj = kubeops.get_or_none(self.kube, r.NODEPOOL, pool_name) if pool_name else None
            pool = NodePool.model_validate(pool_obj) if pool_obj is not None else None
            name = node_claim_name(pool_name or original_name, inp.round.run_id, inp.round.round, [original_name])
            claim = self._create(original, replace.replacement_body(original, name, pool))
            if claim is None:
                continue
            self.starter.start_node_claim(claim, waiter=inp.waiter)
            launched.append(name)
        return launched

    def _create(self, original: Obj, body: Obj) -> Obj | None:
        """Create the replacement (or find it from an earlier try) as the API returns it; None when it was
        created and is gone already (its launch failed)."""
        claim, created = kubeops.create_or_get(self.kube, r.NODECLAIM, body)
        if created:
            pool = str((body["metadata"].get("labels") or {}).get(labels.NODEPOOL, ""))
            relaxed = (body["metadata"].get("annotations") or {}).get(labels.NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION)
            self.metrics.nodeclaims_created.labels(
                reason=disruption_reason(MANUAL), nodepool=pool, min_values_relaxed=relaxed or "false"
            ).inc()
            self.recorder.record(
                original, "Normal", "Replacing", f"launching replacement NodeClaim {body['metadata']['name']}"
            )
        return claim
