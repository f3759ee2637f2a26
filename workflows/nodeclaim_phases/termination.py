"""The NodeClaim workflow's last two phases: drain (taint the node, evict its pods step by step, force
them after the claim's terminationGracePeriod) and terminate (the instance, then the finalizer).
Deterministic."""

from __future__ import annotations

from temporalio import workflow

from activities.nodeclaim.models import ClaimIdentity
from activities.nodeclaim.termination import BeginTerminationInput, DrainInput, TerminateInput, TerminationActivities
from apis.nodeclaim import DRAINED, EXPIRED
from apis.values.duration import parse_duration
from workflows import timing
from workflows.nodeclaim_phases.claim import (
    ClaimRun,
    history_too_long,
    identity,
    kick_provisioner,
    ref_fields,
    run_activity,
    sleep_until,
)
from workflows.nodeclaim_phases.fleet_view import publish
from workflows.nodeclaim_state import DELETED, TERMINATING


async def drain_node(claim: ClaimRun) -> None:
    state = claim.state
    publish(state)
    begin = BeginTerminationInput(**identity(claim), reason=claim.pending_termination, expired=state.expired)
    await run_activity(TerminationActivities.begin_termination, begin)
    state.termination_reason = claim.pending_termination
    if state.expired:
        state.conditions[EXPIRED] = "True"
    if state.drain_started_at is None:
        state.drain_started_at = workflow.now()
        grace = parse_duration(claim.input.termination_grace_period) if claim.input.termination_grace_period else None
        state.drain_deadline = state.drain_started_at + grace if grace else None
    while state.node_name and not claim.skip_drain:
        force = state.drain_deadline is not None and workflow.now() >= state.drain_deadline
        progress = await workflow.execute_activity_method(
            TerminationActivities.drain_step,
            DrainInput(**identity(claim), force=force, deadline=state.drain_deadline),
            start_to_close_timeout=timing.DRAIN_STEP,
            heartbeat_timeout=timing.HEARTBEAT,
            retry_policy=timing.ACTIVITY_RETRY,
        )
        if progress.remaining == 0:
            state.conditions[DRAINED] = "True"
            break
        state.waiting_for = progress.message
        await sleep_until(state, lambda: claim.skip_drain, timing.DRAIN_POLL)
        if history_too_long():
            return
    state.waiting_for = ""
    state.phase = TERMINATING


async def terminate(claim: ClaimRun) -> None:
    state = claim.state
    publish(state)
    if not state.termination_reason:
        begin = BeginTerminationInput(
            **identity(claim),
            reason=claim.pending_termination,
            expired=state.expired,
            registration_failed=state.registration_failed,
        )
        await run_activity(TerminationActivities.begin_termination, begin)
        state.termination_reason = claim.pending_termination
    while True:
        result = await run_activity(
            TerminationActivities.terminate_instance,
            TerminateInput(**ref_fields(claim), instance_id=state.instance_id),
        )
        if result.gone:
            if result.message:
                state.failure = result.message
            break
        state.waiting_for = f"instance {state.instance_id} to terminate"
        publish(state)
        await workflow.sleep(timing.TERMINATE_POLL)
    await run_activity(TerminationActivities.finalize, ClaimIdentity(**identity(claim)))
    state.waiting_for = ""
    state.phase = DELETED
    await kick_provisioner()
