"""The registration phase: find the Node with the instance's providerID (one activity per look), waiting
for the Node watch's `node_changed` signal with a doubling backstop timer, until the registration TTL.
Deterministic."""

from __future__ import annotations

from temporalio import workflow

from activities.nodeclaim.registration import FindNodeInput, RegistrationActivities
from apis.nodeclaim import REGISTERED
from workflows import timing
from workflows.nodeclaim_phases.claim import ClaimRun, claim_gone, ref_fields, run_activity, sleep_until
from workflows.nodeclaim_state import DRAINING, INITIALIZING, TERMINATING


async def register(claim: ClaimRun) -> None:
    state = claim.state
    interval = timing.NODE_WAIT_FIRST
    while True:
        claim.node_seen = False  # a signal from now on means the Node changed after this look
        found = await run_activity(
            RegistrationActivities.register,
            FindNodeInput(**ref_fields(claim), provider_id=state.provider_id),
        )
        if found.claim_gone:
            claim.pending_termination = claim.pending_termination or claim_gone(claim)
            state.phase = TERMINATING
            return
        if found.node_name:
            state.node_name, state.node_uid = found.node_name, found.node_uid
            state.conditions[REGISTERED] = "True"
            claim.initialization = found.initialization
            state.phase = DRAINING if claim.pending_termination else INITIALIZING
            return
        if claim.pending_termination:
            state.phase = TERMINATING
            return
        deadline = state.registration_deadline
        if deadline is not None and workflow.now() >= deadline:
            claim.pending_termination = f"the node did not register within {claim.input.registration_ttl}"
            state.registration_failed = True
            state.phase = TERMINATING
            return
        state.waiting_for = "the Node with this instance's providerID"
        wait = min(interval, deadline - workflow.now()) if deadline is not None else interval
        await sleep_until(state, claim.node_wake, wait)
        interval = min(interval * 2, timing.NODE_WAIT_MAX)
