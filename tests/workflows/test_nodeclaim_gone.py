"""A NodeClaim that is gone ends its workflow in every phase: no phase waits on a claim that no longer exists
(a workflow that outlived its claim must not poll forever, nor act on a same-named successor)."""

from __future__ import annotations

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.workflows.claim_status import wait_until_asleep
from tests.workflows.fakes import World
from tests.workflows.test_nodeclaim_workflow import start, wait_for_phase
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.nodeclaim_state import DELETED, RUNNING, NodeClaimState


@pytest.mark.parametrize(
    ("phase", "says", "terminates"),
    [
        ("launch", "NodeClaimGone", False),
        ("registration", "the NodeClaim default-abcde (uid uid-1) no longer exists", True),
        ("initialization", "NodeClaim default-abcde (uid uid-1) is gone", True),
        ("running", "the NodeClaim or its Node was deleted", True),
    ],
)
async def test_a_claim_gone_in_any_phase_ends_its_workflow_and_says_why(
    time_env: WorkflowEnvironment, worker: str, world: World, phase: str, says: str, terminates: bool
) -> None:
    world.claim_gone_in = phase
    handle = await start(time_env, worker, claim_uid="uid-1")
    if phase == "running":  # a running claim looks only when signalled (here as the claim sweep would)
        await wait_for_phase(handle, time_env, RUNNING)
        await wait_until_asleep(time_env, handle.id)
        await handle.signal(NodeClaimWorkflow.check_drift, "claim sweep: no longer drifted")
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    assert says in (final.failure if phase == "launch" else final.termination_reason)
    assert world.find_calls <= 1 and world.init_calls <= 1  # found gone once, not polled again
    assert (world.terminate_calls > 0) == terminates  # its own instance (the activity checks the tag)
    if terminates:
        assert world.calls[-1] == "finalize"
