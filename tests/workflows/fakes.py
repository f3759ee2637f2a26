"""Stand-in activities under the real names, over a tiny in-memory world, for workflow tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity

from activities.nodeclaim.initialization import InitializationResult
from activities.nodeclaim.launch import LaunchFailedInput, LaunchOutcome
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from activities.nodeclaim.registration import FindNodeInput, Registration
from activities.nodeclaim.running import ClaimLiveness, DriftCheckInput, DriftResult, RunningCheck
from activities.nodeclaim.termination import (
    BeginTerminationInput,
    DrainInput,
    DrainProgress,
    TerminateInput,
    TerminateResult,
)
from activities.provisioning.models import ApplyPlanInput, ApplyPlanResult, ProvisionPlan, ProvisionRound


@dataclass
class World:
    """What the stand-ins see and record."""

    ice: bool = False
    node_after_polls: int = 1  # register finds the Node from this call on (-1: never)
    ready_after_polls: int = 1
    pods_on_node: int = 2
    terminate_polls: int = 2
    calls: list[str] = field(default_factory=list)
    find_calls: int = 0
    init_calls: int = 0
    terminate_calls: int = 0
    solve_rounds: list[int] = field(default_factory=list)
    solve_triggers: list[int] = field(default_factory=list)  # each round's trigger_pods
    launched: int = 0
    launch_node_pool: str = "default"  # what launch reports ('' keeps the workflow input's pool)
    drift_after_checks: int = -1  # running_check reports AMIDrift from this call on (-1: never)
    drift_checks: int = 0
    pdb_refusals: int = 0  # drain_step answers "refused by a PDB" this many times first
    # The phase whose activity first finds the NodeClaim gone (deleted, finalizer removed by hand, or its
    # name now another claim's): "launch", "registration", "initialization" or "running"; "" never.
    claim_gone_in: str = ""
    drain_inputs: list[DrainInput] = field(default_factory=list)
    begin_inputs: list[BeginTerminationInput] = field(default_factory=list)

    def activities(self) -> list[Callable[..., Any]]:
        world = self

        @activity.defn(name="launch")
        def launch(ref: ClaimRef) -> LaunchOutcome:
            world.calls.append("launch")
            outcome = launch_outcome(ref)
            if not outcome.failure:
                world.calls.append("mark_launched")
            return outcome

        @activity.defn(name="check_initialized")
        def check_initialized_activity(inp: ClaimIdentity) -> InitializationResult:
            return check_initialized(inp)

        def launch_outcome(ref: ClaimRef) -> LaunchOutcome:
            if world.claim_gone_in == "launch":
                return LaunchOutcome(failure="NodeClaimGone", message="the NodeClaim was deleted before launch")
            if world.ice:
                return LaunchOutcome(failure="InsufficientCapacity", message="no m5.large in us-west-2a")
            world.launched += 1
            return LaunchOutcome(
                instance_id="i-0123",
                instance_type="m5.large",
                zone="us-west-2a",
                capacity_type="on-demand",
                provider_id="aws:///us-west-2a/i-0123",
                node_pool=world.launch_node_pool,
            )

        @activity.defn(name="launch_failed")
        def launch_failed(inp: LaunchFailedInput) -> None:
            world.calls.append(f"launch_failed:{inp.failure}")

        @activity.defn(name="register")
        def register(check: FindNodeInput) -> Registration:
            world.find_calls += 1
            if world.claim_gone_in == "registration":
                return Registration(claim_gone=True)
            if world.node_after_polls >= 0 and world.find_calls >= world.node_after_polls:
                world.calls.append("register_node")
                node = "ip-10-0-0-1.us-west-2.compute.internal"
                ident = ClaimIdentity(name=check.name, uid=check.uid, provider_id=check.provider_id, node_name=node)
                return Registration(node_name=node, initialization=check_initialized(ident))
            return Registration()

        def check_initialized(inp: ClaimIdentity) -> InitializationResult:
            world.init_calls += 1
            if world.claim_gone_in == "initialization":
                return InitializationResult(gone=True, waiting_for=f"NodeClaim {inp.name} (uid {inp.uid}) is gone")
            if world.init_calls >= world.ready_after_polls:
                world.calls.append("initialized")
                return InitializationResult(initialized=True)
            return InitializationResult(waiting_for="node is not Ready")

        def drift_check() -> DriftResult:
            world.drift_checks += 1
            if world.drift_after_checks >= 0 and world.drift_checks >= world.drift_after_checks:
                return DriftResult(drifted=True, reason="AMIDrift", message="image ami-old is not among ...")
            return DriftResult()

        @activity.defn(name="running_check")
        def running_check(inp: DriftCheckInput) -> RunningCheck:
            if world.claim_gone_in == "running":
                return RunningCheck(liveness=ClaimLiveness(exists=False, deleting=True))
            return RunningCheck(liveness=ClaimLiveness(), drift=drift_check())

        @activity.defn(name="begin_termination")
        def begin_termination(inp: BeginTerminationInput) -> None:
            world.calls.append("begin_termination")
            world.begin_inputs.append(inp)

        @activity.defn(name="drain_step")
        def drain_step(inp: DrainInput) -> DrainProgress:
            world.calls.append("drain_step")
            world.drain_inputs.append(inp)
            if world.pdb_refusals > 0 and not inp.force:
                world.pdb_refusals -= 1
                return DrainProgress(remaining=world.pods_on_node, blocked_by_pdb=1, message="refused by a PDB")
            world.pods_on_node = max(0, world.pods_on_node - 1)
            return DrainProgress(remaining=world.pods_on_node)

        @activity.defn(name="terminate_instance")
        def terminate_instance(inp: TerminateInput) -> TerminateResult:
            world.terminate_calls += 1
            return TerminateResult(gone=world.terminate_calls >= world.terminate_polls)

        @activity.defn(name="finalize")
        def finalize(inp: ClaimIdentity) -> None:
            world.calls.append("finalize")

        @activity.defn(name="solve")
        def solve(rnd: ProvisionRound) -> ProvisionPlan:
            world.solve_rounds.append(rnd.round)
            world.solve_triggers.append(rnd.trigger_pods)
            return ProvisionPlan()

        @activity.defn(name="apply_plan")
        def apply_plan(inp: ApplyPlanInput) -> ApplyPlanResult:
            return ApplyPlanResult()

        return [
            launch, launch_failed, register, check_initialized_activity,
            begin_termination, drain_step, terminate_instance, finalize, solve, apply_plan,
            running_check,
        ]  # fmt: skip
