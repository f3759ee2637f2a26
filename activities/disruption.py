"""Disruption activities: read the cluster fresh, decide (scheduling.disruption), and start a command.

`decide_disruption` snapshots Nodes, NodeClaims, bound pods, PodDisruptionBudgets, NodePools and the
instance-type catalog, and runs Karpenter's decision (the same scheduler as provisioning simulates where
pods would go). What it returns is recorded in the controller workflow's history: the command, if any, and
a count of rejections by code (the full per-node reasons are what `nodeflow explain` prints).

`start_disruption` executes the start of a command: it taints each candidate Node
`karpenter.sh/disrupted:NoSchedule` (only a Node whose providerID is its NodeClaim's, through
activities.ownership), sets the NodeClaim condition `DisruptionReason` and records the event
`DisruptionTerminating`. The workflow then signals each candidate's NodeClaim workflow to drain and
terminate it.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime

from pydantic import BaseModel, Field
from temporalio import activity

from activities import kubeops, ownership
from activities.disruption_snapshot import read_disruption_input
from activities.heartbeat import heartbeating
from apis import labels
from apis.meta import set_condition
from apis.nodeclaim import NodeClaim
from cloudprovider.types import CloudProvider
from kube import resources as r
from kube.types import Kube, Obj
from scheduling.disruption import Command, DisruptionInput, decide

log = logging.getLogger(__name__)
DISRUPTION_REASON = "DisruptionReason"
DISRUPTED_TAINT = kubeops.adding_taint(labels.DISRUPTED_TAINT_KEY, "NoSchedule")


class DecideInput(BaseModel):
    """`executable_methods`: the methods whose commands the controller executes; a command of another
    method is returned with `executable=False` (recorded, not acted on). `single_node_first`: the previous
    pass's skipped single-node candidates."""

    executable_methods: list[str] = Field(default_factory=lambda: ["Emptiness"])
    spot_to_spot_consolidation: bool = False
    single_node_first: list[str] = Field(default_factory=list)


class DisruptionRound(BaseModel):
    """One decision as the workflow records it."""

    command: Command | None = None
    executable: bool = False
    rejections: dict[str, int] = Field(default_factory=dict)  # rejection code -> how many nodes
    candidates_seen: int = 0
    single_node_skipped: list[str] = Field(default_factory=list)
    timed_out: bool = False

    def candidate_names(self) -> list[str]:
        return sorted(c.node_claim for c in self.command.candidates) if self.command else []

    def summary(self) -> str:
        if self.command is None:
            return f"no command; rejected: {self.rejections or 'none'}"
        verb = "executing" if self.executable else "decided, not executed (method not enabled)"
        names = ", ".join(self.candidate_names())
        return f"{self.command.method} {self.command.action} of {names}: {verb}; {self.command.message}"


class StartInput(BaseModel):
    command: Command


class DisruptionActivities:
    """Constructed by the composition root with the boundaries."""

    def __init__(self, kube: Kube, cloud: CloudProvider, recorder: kubeops.Recorder) -> None:
        self.kube = kube
        self.cloud = cloud
        self.recorder = recorder

    def snapshot(self, inp: DecideInput) -> DisruptionInput:
        """The cluster as the decision takes it, read now (activities.disruption_snapshot)."""
        return read_disruption_input(
            self.kube,
            self.cloud.instance_types(None),
            spot_to_spot_consolidation=inp.spot_to_spot_consolidation,
            single_node_first=inp.single_node_first,
        )

    @activity.defn(name="decide_disruption")
    def decide_disruption(self, inp: DecideInput) -> DisruptionRound:
        """Decide on a fresh snapshot. Heartbeats."""
        with heartbeating():
            decision = decide(self.snapshot(inp))
        command = decision.command
        chosen = command.candidates if command else []
        return DisruptionRound(
            command=command,
            executable=command is not None and command.method in inp.executable_methods,
            rejections=dict(sorted(Counter(rej.code for rej in decision.rejections).items())),
            candidates_seen=len({rej.node for rej in decision.rejections} | {c.node for c in chosen}),
            single_node_skipped=decision.single_node_skipped,
            timed_out=decision.timed_out,
        )

    @activity.defn(name="start_disruption")
    def start_disruption(self, inp: StartInput) -> list[str]:
        """Taint each candidate's Node, mark its NodeClaim with `DisruptionReason` and an event. Returns the
        NodeClaims it marked (a candidate whose NodeClaim or Node is gone, or not the one decided on, is
        left out). Idempotent."""
        marked = []
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        message = f"{inp.command.method}: {inp.command.message}"
        for candidate in inp.command.candidates:
            claim = kubeops.get_or_none(self.kube, r.NODECLAIM, candidate.node_claim)
            if claim is None or claim["metadata"].get("deletionTimestamp"):
                continue
            owned_claim = ownership.node_claim(candidate.node_claim, claim["metadata"].get("uid", ""))
            provider_id = (claim.get("status") or {}).get("providerID", "")
            node = ownership.node(candidate.node, provider_id)
            if not provider_id or ownership.update(self.kube, node, DISRUPTED_TAINT) is None:
                continue

            def mark(obj: Obj) -> bool:
                model = NodeClaim.model_validate(obj)
                conditions = set_condition(
                    model.status.conditions,
                    DISRUPTION_REASON,
                    "True",
                    inp.command.reason,
                    message,
                    stamp,  # type: ignore[arg-type]
                )
                obj["status"] = model.status.model_copy(update={"conditions": conditions}).to_kube()
                return True

            ownership.update(self.kube, owned_claim, mark, subresource="status")
            self.recorder.record(claim, "Normal", "DisruptionTerminating", message)
            marked.append(candidate.node_claim)
        return marked
