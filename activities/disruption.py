"""The disruption decision as an activity: read the cluster fresh (activities.disruption_snapshot) and
decide (scheduling.disruption: Karpenter's methods, the same scheduler as provisioning simulating where
pods would go). What it returns is recorded in the controller workflow's history: the command, if any,
whether the controller executes its method, and a count of rejections by code (the full per-node reasons
are what `nodeflow explain` prints). Executing a command is activities.disruption_execution.
"""

from __future__ import annotations

import logging
from collections import Counter

from pydantic import BaseModel, Field
from temporalio import activity

from activities import kubeops
from activities.disruption_snapshot import read_disruption_input
from activities.heartbeat import heartbeating
from cloudprovider.types import CloudProvider
from kube.types import Kube
from scheduling.disruption import Command, DisruptionInput, decide

log = logging.getLogger(__name__)


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
