"""What a NodeClaim run holds between its phases (`ClaimRun`) and the helpers the phases share: the claim's
identity for activities, short activities, durable sleeps, drift bookkeeping, the provisioner kick, the
signal to a workflow waiting for the claim, and what continue-as-new carries. Deterministic."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import workflow

from activities.nodeclaim.initialization import InitializationResult
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from activities.nodeclaim.running import DriftResult
from apis.nodeclaim import DRIFTED
from workflows import timing
from workflows.external import signal_workflow
from workflows.messages import DisruptionSignal, ProvisionerSignal
from workflows.nodeclaim_phases.fleet_view import publish
from workflows.nodeclaim_state import RUNNING, NodeClaimInput, NodeClaimState, input_json
from workflows.provisioner import WORKFLOW_ID as PROVISIONER_ID

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out")


@dataclasses.dataclass(slots=True)
class ClaimRun:
    """One run of a claim's workflow: its input and state, and what signals asked for. Slotted: a Running
    run is cached for the node's life, and this object is memory per node."""

    state: NodeClaimState
    input: NodeClaimInput
    pending_termination: str = ""  # why the claim must terminate (a signal or a phase asked); '' = no
    continue_as_new: bool = False  # a phase asks for continue-as-new (the running phase's run is full)
    drift_check_requested: bool = False  # the `check_drift` signal: run the running check now
    skip_drain: bool = False  # the `repair` signal: terminate without draining
    node_seen: bool = False  # the `node_changed` signal since the last look at the Node
    initialization: InitializationResult | None = None  # `register`'s first initialization check

    def start(self, claim_input: NodeClaimInput) -> None:
        """The run begins with `claim_input` (a new claim's, or what continue-as-new carried); a request
        signalled before it began is kept."""
        self.input = claim_input
        self.state = claim_input.state or NodeClaimState(name=claim_input.name, node_pool=claim_input.node_pool)
        self.pending_termination = self.pending_termination or claim_input.pending_termination
        self.drift_check_requested = self.drift_check_requested or claim_input.drift_check_requested
        self.skip_drain = self.skip_drain or claim_input.skip_drain

    def running_wake(self) -> bool:
        """What ends the running phase's wait (a method: a lambda would be one more object per cached run)."""
        return bool(self.pending_termination or self.drift_check_requested)

    def node_wake(self) -> bool:
        """What ends a wait for the Node (registration, initialization): a termination, or `node_changed`."""
        return bool(self.pending_termination or self.node_seen)


def ref_fields(claim: ClaimRun) -> dict[str, str]:
    """The claim's name and the NodeClaim uid recorded at start (activities act on that object only)."""
    return {"name": claim.state.name, "uid": claim.input.claim_uid}


def ref(claim: ClaimRun) -> ClaimRef:
    return ClaimRef(**ref_fields(claim))


def identity(claim: ClaimRun) -> dict[str, str]:
    """The fields of ClaimIdentity: the claim, and its Node by providerID and the uid recorded at
    registration (activities never touch a Node that does not match)."""
    return ClaimIdentity(
        **ref_fields(claim),
        provider_id=claim.state.provider_id,
        node_name=claim.state.node_name,
        node_uid=claim.state.node_uid,
    ).model_dump()


def claim_gone(claim: ClaimRun) -> str:
    uid = f" (uid {claim.input.claim_uid})" if claim.input.claim_uid else ""
    return f"the NodeClaim {claim.state.name}{uid} no longer exists"


async def run_activity(activity: Callable[[Any, In], Out], arg: In) -> Out:
    """Run a short activity (SHORT_ACTIVITY per attempt, ACTIVITY_RETRY) and return its result."""
    method: Callable[[Any, In], Awaitable[Out]] = activity  # type: ignore[assignment]
    return await workflow.execute_activity_method(
        method, arg, start_to_close_timeout=timing.SHORT_ACTIVITY, retry_policy=timing.ACTIVITY_RETRY
    )


async def sleep_until(state: NodeClaimState, wake: Callable[[], bool], duration: timedelta | None) -> None:
    """A durable timer that a signal making `wake` true cuts short; with `duration` None, no timer at all:
    only a signal ends the wait. The fleet view of `state` is published first: what the claim waits in is
    what the Temporal UI shows."""
    publish(state)
    if wake():
        return
    try:
        await workflow.wait_condition(wake, timeout=duration)
    except TimeoutError:
        pass


def record_drift(state: NodeClaimState, result: DriftResult) -> None:
    state.drift_checks += 1
    state.last_drift_check = workflow.now()
    state.drift_reason, state.drift_message = result.reason, result.message
    if result.drifted:
        state.conditions[DRIFTED] = f"True ({result.reason})"
    else:
        state.conditions.pop(DRIFTED, None)


async def tell_waiter(claim: ClaimRun) -> None:
    """Signal the workflow waiting for this claim (NodeClaimInput.waiter: the disruption controller, for
    a replacement) `replacement_ready`, once: the claim is Initialized, or ended without being so. The
    waiter looks at the claim itself; should it be gone, its own poll stands in."""
    waiter = claim.input.waiter
    claim.input = dataclasses.replace(claim.input, waiter="")
    if not await signal_workflow(waiter, DisruptionSignal.REPLACEMENT_READY, claim.state.name):
        # the waiter ended (its command rolled back, or it was terminated by hand)
        workflow.logger.info("%s not told that %s is %s", waiter, claim.state.name, claim.state.phase)


async def kick_provisioner() -> None:
    """Pods of a failed or terminated claim are pending again: start a provisioning round."""
    if not await signal_workflow(PROVISIONER_ID, ProvisionerSignal.PODS_PENDING):
        # the provisioner may not be running (e.g. tests); the pod watcher re-triggers
        workflow.logger.info("provisioner not signalled")


def history_too_long() -> bool:
    info = workflow.info()
    return info.get_current_history_length() > timing.MAX_HISTORY_EVENTS or info.is_continue_as_new_suggested()


def entered_running(claim: ClaimRun, before: str) -> bool:
    """The claim just became Running in this run: the long phase starts in a fresh run."""
    return before != RUNNING and claim.state.phase == RUNNING


def continued_input(claim: ClaimRun) -> dict[str, Any]:
    """The next run's input (a NodeClaimInput as JSON): the state, and any signalled request not acted on
    yet. Fields at their defaults are left out (the next run's NodeClaimInput has them anyway): the
    input is kept in the worker's memory for as long as the run is cached, about nine times its size,
    and a Running claim's run is cached for days (benchmarks/README.md, idle cost)."""
    continued = dataclasses.replace(
        claim.input,
        state=claim.state,
        pending_termination=claim.pending_termination,
        drift_check_requested=claim.drift_check_requested,
        skip_drain=claim.skip_drain,
    )
    return input_json(continued)
