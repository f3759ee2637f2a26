"""The launch phase: create the instance (one activity, retried within LAUNCH_TIMEOUT), record it, and
move on to registration; a launch that fails for good deletes the claim. Deterministic."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

from activities.nodeclaim.launch import LaunchActivities, LaunchFailedInput
from apis.nodeclaim import LAUNCH_FAILED, LAUNCHED
from apis.values.duration import parse_duration
from workflows import timing
from workflows.nodeclaim_phases.claim import ClaimRun, kick_provisioner, ref, ref_fields, run_activity
from workflows.nodeclaim_state import DELETED, REGISTERING, TERMINATING


async def launch(claim: ClaimRun) -> None:
    try:
        outcome = await workflow.execute_activity_method(
            LaunchActivities.launch,
            ref(claim),
            start_to_close_timeout=timing.LAUNCH_ATTEMPT,
            schedule_to_close_timeout=timing.LAUNCH_TIMEOUT,
            heartbeat_timeout=timing.HEARTBEAT,
            retry_policy=timing.LAUNCH_RETRY,
        )
    except ActivityError as err:
        cause = err.cause
        await _launch_failed(claim, LAUNCH_FAILED, str(cause or err))
        return
    if outcome.failure:
        await _launch_failed(claim, outcome.failure, outcome.message)
        return
    state = claim.state
    state.instance_id = outcome.instance_id
    state.instance_type = outcome.instance_type
    state.zone = outcome.zone
    state.capacity_type = outcome.capacity_type
    state.provider_id = outcome.provider_id
    state.node_pool = outcome.node_pool or state.node_pool
    if outcome.claim_deleting:
        claim.pending_termination = claim.pending_termination or "NodeClaim deleted while launching"
    state.conditions[LAUNCHED] = "True"
    now = workflow.now()
    state.launched_at = now
    state.registration_deadline = now + (parse_duration(claim.input.registration_ttl) or timedelta(minutes=15))
    state.phase = TERMINATING if claim.pending_termination else REGISTERING


async def _launch_failed(claim: ClaimRun, failure: str, message: str) -> None:
    claim.state.failure = f"{failure}: {message}"
    await run_activity(
        LaunchActivities.launch_failed,
        LaunchFailedInput(**ref_fields(claim), failure=failure, message=message),
    )
    await kick_provisioner()
    claim.state.phase = DELETED
