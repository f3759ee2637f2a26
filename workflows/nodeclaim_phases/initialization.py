"""The initialization phase: wait until the Node is ready and its startup taints are gone (one activity
per look; registration's first look is reused), woken by `node_changed` or a doubling backstop timer.
Deterministic."""

from __future__ import annotations

from activities.nodeclaim.initialization import InitializationActivities
from activities.nodeclaim.models import ClaimIdentity
from apis.nodeclaim import INITIALIZED
from workflows import timing
from workflows.nodeclaim_phases.claim import ClaimRun, identity, run_activity, sleep_until
from workflows.nodeclaim_state import DRAINING, RUNNING


async def initialize(claim: ClaimRun) -> None:
    state = claim.state
    interval = timing.NODE_WAIT_FIRST
    result, claim.initialization = claim.initialization, None  # `register` checked once already
    while not claim.pending_termination:
        if result is None:
            claim.node_seen = False
            result = await run_activity(InitializationActivities.check_initialized, ClaimIdentity(**identity(claim)))
        if result.gone:
            claim.pending_termination = claim.pending_termination or result.waiting_for
            break
        if result.initialized:
            state.conditions[INITIALIZED] = "True"
            state.waiting_for = ""
            state.phase = RUNNING
            return
        state.waiting_for = result.waiting_for
        await sleep_until(state, claim.node_wake, interval)
        interval = min(interval * 2, timing.NODE_WAIT_MAX)
        result = None
    state.phase = DRAINING
