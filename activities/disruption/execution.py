"""Executing a disruption command, step by step, each step an idempotent activity the controller workflow
records: taint the candidates (`start_disruption`), launch their replacements (`launch_replacements`),
watch the replacements come up (`replacements_state`), and, when one fails, undo (`abort_disruption`:
remove the taint and the `DisruptionReason` condition, delete the replacements); else tell the candidates'
NodeClaim workflows to drain and terminate (`signal_disruption`). Pods are never left
without a place: the candidates drain only after every replacement is Initialized.

Nodes and NodeClaims are written only through activities.nodeclaim.ownership: a candidate's Node is the one whose
providerID is its NodeClaim's.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from pydantic import BaseModel, Field
from temporalio import activity

from activities.metrics.labels import command_labels, disruption_reason, owner_labels
from activities.metrics.registry import Metrics
from activities.nodeclaim import ownership
from activities.nodeclaim.base import setting_conditions
from activities.provisioning.claim_creation import ClaimLauncher, WorkflowStarter
from activities.provisioning.models import ProvisionRound
from apis import labels
from apis.nodeclaim import DISRUPTION_REASON, INITIALIZED
from kube import ops as kubeops
from kube import resources as r
from kube.types import Kube, Obj
from scheduling.disruption import CandidateRef, Command
from scheduling.types import PlannedNodeClaim

DISRUPTED_TAINT = kubeops.adding_taint(labels.DISRUPTED_TAINT_KEY, "NoSchedule")
NOT_DISRUPTED = kubeops.removing_taint(labels.DISRUPTED_TAINT_KEY, "NoSchedule")
MARK_CONCURRENCY = 8  # candidates marked at once by start_disruption


class ClaimSignaller(WorkflowStarter, Protocol):
    """Also signals NodeClaim workflows to delete (drain and terminate): all `names` at once; returns those
    whose workflow was running. workers.temporal.starter names the signal (workflows.messages)."""

    def delete_node_claims(self, names: list[str], reason: str) -> list[str]: ...


class SignalInput(BaseModel):
    """The candidates' NodeClaims, and the termination reason their workflows record."""

    names: list[str]
    reason: str


class StartInput(BaseModel):
    command: Command


class LaunchReplacementsInput(BaseModel):
    """`round` names the replacement claims deterministically (a retried launch finds them); `reason` is the
    command's (`Drifted`, `Underutilized`, ...), the reason they count as created for; `waiter`: the
    workflow that waits for the replacements (activities.provisioning.claim_creation.WorkflowStarter)."""

    round: ProvisionRound
    replacements: list[PlannedNodeClaim]
    reason: str = ""
    waiter: str = ""


class ReplacementsState(BaseModel):
    initialized: list[str] = Field(default_factory=list)
    gone: list[str] = Field(default_factory=list)
    waiting: list[str] = Field(default_factory=list)


class AbortInput(BaseModel):
    command: Command
    replacements: list[str] = Field(default_factory=list)
    reason: str = ""


def _initialized(claim: Obj) -> bool:
    conditions = (claim.get("status") or {}).get("conditions") or []
    return any(c.get("type") == INITIALIZED and c.get("status") == "True" for c in conditions)


class DisruptionExecution:
    """Constructed by the composition root with the boundaries and the workflow starter. `metrics` counts
    the commands executed, the candidates disrupted and the replacements created, by the command's reason."""

    def __init__(
        self, kube: Kube, recorder: kubeops.Recorder, starter: ClaimSignaller, metrics: Metrics | None = None
    ) -> None:
        self.kube = kube
        self.recorder = recorder
        self.starter = starter
        self.metrics = metrics or Metrics()
        self.launcher = ClaimLauncher(kube, starter, self.metrics)

    @property
    def activities(self) -> list[Callable[..., Any]]:
        return [
            self.start_disruption,
            self.launch_replacements,
            self.replacements_state,
            self.abort_disruption,
            self.signal_disruption,
        ]

    def _owned(self, candidate: CandidateRef) -> tuple[Obj, ownership.Owned, ownership.Owned] | None:
        """The candidate's NodeClaim (not being deleted) and the identities of it and its Node."""
        claim = kubeops.get_or_none(self.kube, r.NODECLAIM, candidate.node_claim)
        if claim is None or claim["metadata"].get("deletionTimestamp"):
            return None
        provider_id = (claim.get("status") or {}).get("providerID", "")
        if not provider_id:
            return None
        owned_claim = ownership.node_claim(candidate.node_claim, claim["metadata"].get("uid", ""))
        return claim, owned_claim, ownership.node(candidate.node, provider_id)

    def _set_reason(self, owned_claim: ownership.Owned, status: str, reason: str, message: str) -> bool:
        """Set the `DisruptionReason` condition; True when this call changed it (a retried step finds it set)."""
        changed = False
        mark = setting_conditions((DISRUPTION_REASON, status, reason, message))

        def mutate(obj: Obj) -> bool:  # runs again on a conflict: `changed` is the last attempt's
            nonlocal changed
            changed = mark(obj)
            return changed

        return ownership.update(self.kube, owned_claim, mutate, subresource="status") is not None and changed

    @activity.defn(name="start_disruption")
    def start_disruption(self, inp: StartInput) -> list[str]:
        """Taint each candidate's Node `karpenter.sh/disrupted:NoSchedule` and set `DisruptionReason` on its
        NodeClaim, with the event `DisruptionLaunching` (replacements to come) or `DisruptionTerminating`.
        Returns the NodeClaims it marked; a candidate whose NodeClaim or Node is gone, being deleted or not
        the one decided on is left out. The command counts in `karpenter_voluntary_disruption_decisions_total`
        once, when it is executed (Karpenter counts it then, after validation). Idempotent."""
        command = inp.command
        message = f"{command.method}: {command.message}"
        event = "DisruptionLaunching" if command.action == "Replace" else "DisruptionTerminating"

        def mark(candidate: CandidateRef) -> tuple[str, bool] | None:
            """(the candidate's NodeClaim, whether this call marked it first), None when it is not marked."""
            found = self._owned(candidate)
            if found is None:
                return None
            claim, owned_claim, owned_node = found
            if ownership.update(self.kube, owned_node, DISRUPTED_TAINT) is None:
                return None
            first = self._set_reason(owned_claim, "True", command.reason, message)
            if first:
                owner = owner_labels(claim["metadata"].get("labels") or {})
                self.metrics.nodeclaims_disrupted.labels(reason=disruption_reason(command.reason), **owner).inc()
            self.recorder.record(claim, "Normal", event, message)
            return candidate.node_claim, first

        # Each candidate is a few API calls: an Emptiness command of hundreds of nodes marks them in parallel.
        with ThreadPoolExecutor(MARK_CONCURRENCY, thread_name_prefix="disruption-mark") as pool:
            marked = [found for found in pool.map(mark, command.candidates) if found is not None]
        if any(first for _, first in marked):  # once per command: a retried step finds its candidates marked
            labels = command_labels(command)
            self.metrics.disruption_decisions.labels(**labels).inc()
            for node_pool in sorted({c.node_pool for c in command.candidates}):  # once per NodePool, as Karpenter
                self.metrics.disruption_decisions_by_nodepool.labels(nodepool=node_pool, **labels).inc()
        return [name for name, _ in marked]

    @activity.defn(name="signal_disruption")
    def signal_disruption(self, inp: SignalInput) -> list[str]:
        """Signal `delete` to every candidate's NodeClaim workflow at once, which drains and terminates its
        node; the names signalled (a workflow that ended meanwhile is left out: its node is going or gone).
        Direct signals, not the controller's own: signals a workflow sends are delivered one after the
        other through its own history, a few a second on a busy dev server. Idempotent."""
        return self.starter.delete_node_claims(inp.names, inp.reason)

    @activity.defn(name="launch_replacements")
    def launch_replacements(self, inp: LaunchReplacementsInput) -> list[str]:
        """Create the replacement NodeClaims and start their workflows (as provisioning does). Idempotent."""
        reason = disruption_reason(inp.reason or "disrupted")
        return self.launcher.launch(inp.round, inp.replacements, reason, waiter=inp.waiter)

    @activity.defn(name="replacements_state")
    def replacements_state(self, names: list[str]) -> ReplacementsState:
        """Which replacements are Initialized, which are gone (their launch failed), which still come up."""
        state = ReplacementsState()
        for name in names:
            obj = kubeops.get_or_none(self.kube, r.NODECLAIM, name)
            if obj is None or obj["metadata"].get("deletionTimestamp"):
                state.gone.append(name)
            elif _initialized(obj):
                state.initialized.append(name)
            else:
                state.waiting.append(name)
        return state

    @activity.defn(name="abort_disruption")
    def abort_disruption(self, inp: AbortInput) -> None:
        """Undo a command whose replacements failed: untaint the candidates' Nodes, set `DisruptionReason`
        False with the reason (event `DisruptionBlocked`), and delete the replacement NodeClaims (their
        workflows terminate what launched). Idempotent. The command counts in
        `karpenter_voluntary_disruption_queue_failures_total` when this completes (a failed attempt, retried,
        counts nothing)."""
        for candidate in inp.command.candidates:
            found = self._owned(candidate)
            if found is None:
                continue
            claim, owned_claim, owned_node = found
            ownership.update(self.kube, owned_node, NOT_DISRUPTED)
            self._set_reason(owned_claim, "False", "Aborted", inp.reason)
            self.recorder.record(claim, "Warning", "DisruptionBlocked", inp.reason)
        for name in inp.replacements:
            ownership.delete(self.kube, ownership.node_claim(name, ""))
        self.metrics.disruption_queue_failures.labels(**command_labels(inp.command)).inc()
