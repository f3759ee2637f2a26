"""The running phase: an idle node costs nothing. It waits, with no timer, for a signal: a termination
(`delete`, `expire`, `drain`, `repair`) drains the node; `check_drift` runs one running check (liveness
and the full drift check, one activity). The run continues as new every RUNNING_CHECKS_PER_RUN checks.
Deterministic."""

from __future__ import annotations

from activities.nodeclaim.running import DriftCheckInput, RunningActivities
from workflows.nodeclaim_phases.claim import (
    ClaimRun,
    history_too_long,
    identity,
    record_drift,
    run_activity,
    sleep_until,
)
from workflows.nodeclaim_state import DRAINING

# A running run continues as new after this many running checks, so the commands a cached run holds stay
# few: the worker's memory per node does not grow with the node's age.
RUNNING_CHECKS_PER_RUN = 2


async def running(claim: ClaimRun) -> None:
    checks = 0
    while not claim.pending_termination:
        await sleep_until(claim.state, claim.running_wake, None)
        if claim.pending_termination:
            break
        claim.drift_check_requested = False
        if not await _running_check(claim):
            claim.pending_termination = "the NodeClaim or its Node was deleted"
            break
        checks += 1
        if checks >= RUNNING_CHECKS_PER_RUN:
            claim.continue_as_new = True
            return
        if history_too_long():
            return
    claim.state.phase = DRAINING


async def _running_check(claim: ClaimRun) -> bool:
    """One liveness and drift check (one activity); False when the claim or its node is going away."""
    check = await run_activity(
        RunningActivities.running_check, DriftCheckInput(**identity(claim), instance_id=claim.state.instance_id)
    )
    if check.gone:
        return False
    record_drift(claim.state, check.drift)
    return True
