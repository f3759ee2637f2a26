"""Operating a running NodeClaim: drift marking, expire, replace, and drains that wait on PDBs."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from tests.eventually import eventually_async
from tests.workflows.fakes import World
from tests.workflows.histories import save_history
from workflows.nodeclaim import RUNNING_CHECKS_PER_RUN, NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import DELETED, RUNNING, NodeClaimInput, NodeClaimState


async def start(env: WorkflowEnvironment, task_queue: str, **kwargs: object) -> WorkflowHandle:
    inp = NodeClaimInput(name="default-abcde", node_pool="default", **kwargs)  # type: ignore[arg-type]
    return await env.client.start_workflow(NodeClaimWorkflow.run, inp, id=workflow_id(inp.name), task_queue=task_queue)


async def wait_until(
    handle: WorkflowHandle, env: WorkflowEnvironment, check: Callable[[NodeClaimState], bool], what: str
) -> NodeClaimState:
    """Query `status` until `check` holds, skipping 20 s of workflow time between polls. A query that
    times out (it can land while the claim continues as new, on a loaded machine) is polled again."""

    async def status() -> NodeClaimState | None:
        try:
            state: NodeClaimState = await handle.query(NodeClaimWorkflow.status)
        except RPCError as err:
            if err.status != RPCStatusCode.DEADLINE_EXCEEDED and "deadline" not in err.message:
                raise
            return None
        assert check(state), state
        return state

    return await eventually_async(status, timeout=120, what=what, pause=lambda: env.sleep(timedelta(seconds=20)))


async def test_should_mark_the_claim_drifted_by_a_periodic_check(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.drift_after_checks = 3
    handle = await start(time_env, worker, drift_check_interval="1m")
    drifted = await wait_until(handle, time_env, lambda s: bool(s.drift_reason), "Drifted")
    assert drifted.phase == RUNNING  # drift only marks: the disruption controller replaces
    assert drifted.conditions["Drifted"] == "True (AMIDrift)"
    assert drifted.drift_checks >= 3

    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-running-drift")
    assert final.phase == DELETED


async def test_a_running_claim_continues_as_new_every_few_checks_without_republishing(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """Memory per cached node stays flat: a running run holds at most RUNNING_CHECKS_PER_RUN
    cycles, one timer and one `running_check` each, and records no patch marker and no upsert (the search
    attributes and memo it would publish were carried over by continue-as-new)."""
    handle = await start(time_env, worker, drift_check_interval="1m")
    checks = 2 * RUNNING_CHECKS_PER_RUN + 1
    await wait_until(handle, time_env, lambda s: s.drift_checks >= checks, f"{checks} running checks")

    latest = time_env.client.get_workflow_handle(handle.id)
    assert (await latest.describe()).run_id != handle.first_execution_run_id
    kinds = {event.event_type for event in (await latest.fetch_history()).events}
    assert EventType.EVENT_TYPE_MARKER_RECORDED not in kinds
    assert EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES not in kinds
    assert EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED not in kinds
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    assert (await handle.result()).phase == DELETED


async def test_a_check_drift_signal_runs_the_check_at_once(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """The worker signals `check_drift` when a claim's NodePool or EC2NodeClass changes: the check runs
    then, not at the next interval (an hour here)."""
    handle = await start(time_env, worker, state=running_state(), drift_check_interval="1h")
    started = await time_env.get_current_time()
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    world.drift_after_checks = 1
    await handle.signal(NodeClaimWorkflow.check_drift, "NodePool default changed")
    drifted = await wait_until(handle, time_env, lambda s: bool(s.drift_reason), "Drifted")
    assert drifted.drift_checks == 1
    assert await time_env.get_current_time() - started < timedelta(minutes=30)
    await save_history(handle, "nodeclaim-check-drift-signal")
    await handle.signal(NodeClaimWorkflow.delete, "NodeClaim deleted")
    assert (await handle.result()).phase == DELETED


async def test_should_set_expired_before_draining_on_a_manual_expire(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.expire)
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    assert final.expired and final.conditions["Expired"] == "True"
    assert world.begin_inputs[0].expired
    assert final.termination_reason == "expired (manual)"


async def test_should_wait_out_pdb_refusals_and_record_drained(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.pdb_refusals = 3
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.drain, "maintenance")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-drain-pdb")
    assert final.phase == DELETED
    assert final.termination_reason == "maintenance"
    assert final.conditions["Drained"] == "True"
    assert world.calls.count("drain_step") == 3 + 2  # three refusals, then the two pods
    assert not any(step.force for step in world.drain_inputs)


async def test_should_force_the_drain_when_the_termination_grace_period_passes(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.pdb_refusals = 1_000_000  # a PDB that never allows
    handle = await start(time_env, worker, termination_grace_period="1m")
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.drain)
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    forced = [step.force for step in world.drain_inputs]
    assert forced[0] is False and forced[-1] is True


async def test_should_launch_a_replacement_before_draining_on_replace(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.replacement_ready_after_polls = 3
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.replace, "new AMI")
    final: NodeClaimState = await handle.result()
    await save_history(handle, "nodeclaim-replace")

    assert final.phase == DELETED
    assert final.replacement == "default-repl1"
    assert final.termination_reason == "replaced by default-repl1 (new AMI)"
    order = [c for c in world.calls if c in ("create_replacement:default-repl1", "replacement_initialized",
                                              "begin_termination")]  # fmt: skip
    assert order[:3] == ["create_replacement:default-repl1", "replacement_initialized", "begin_termination"]
    child: NodeClaimState = await time_env.client.get_workflow_handle(workflow_id("default-repl1")).query(
        NodeClaimWorkflow.status
    )
    assert child.name == "default-repl1"  # the replacement's own workflow outlives the original


async def test_should_keep_the_node_when_its_replacement_fails(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.replacement_gone = True
    handle = await start(time_env, worker)
    await wait_until(handle, time_env, lambda s: s.phase == RUNNING, "Running")
    await handle.signal(NodeClaimWorkflow.replace)
    state = await wait_until(handle, time_env, lambda s: bool(s.failure), "the replace to fail")
    assert state.phase == RUNNING
    assert "keeps running" in state.failure
    await handle.signal(NodeClaimWorkflow.delete)
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED


def running_state() -> NodeClaimState:
    """A claim's state as continue-as-new carries it once the node is Running."""
    return NodeClaimState(
        name="default-abcde", phase=RUNNING, node_pool="default", instance_id="i-0123",
        node_name="ip-10-0-0-1.us-west-2.compute.internal", conditions={"Initialized": "True"},
    )  # fmt: skip


async def test_a_signal_carried_over_by_continue_as_new_is_acted_on(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    """A drain signalled in the workflow task that continues as new reaches the next run in its input."""
    handle = await start(time_env, worker, state=running_state(), pending_termination="manual drain")
    final: NodeClaimState = await handle.result()
    assert final.phase == DELETED
    assert final.termination_reason == "manual drain"
    assert "begin_termination" in world.calls and world.launched == 0


async def test_a_replacement_does_not_inherit_the_requests_carried_to_its_parent(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    handle = await start(time_env, worker, state=running_state(), pending_replacement="new AMI")
    final: NodeClaimState = await handle.result()
    assert final.termination_reason == "replaced by default-repl1 (new AMI)"
    child = time_env.client.get_workflow_handle(workflow_id("default-repl1"))
    await wait_until(child, time_env, lambda s: s.phase == RUNNING, "the replacement Running")
    assert world.replacements == ["default-repl1"]  # the replacement did not replace itself


async def test_a_replacement_runs_with_the_nodepool_templates_expiry_and_grace_period_now(
    time_env: WorkflowEnvironment, worker: str, world: World
) -> None:
    world.replacement_template = ("168h", "1h")
    handle = await start(time_env, worker, state=running_state(), pending_replacement="template changed")
    await handle.result()
    child = time_env.client.get_workflow_handle(workflow_id("default-repl1"))
    await wait_until(child, time_env, lambda s: s.phase == RUNNING, "the replacement Running")
    started = (await child.fetch_history()).events[0].workflow_execution_started_event_attributes
    child_input = json.loads(started.input.payloads[0].data)
    assert (child_input["expire_after"], child_input["termination_grace_period"]) == ("168h", "1h")
