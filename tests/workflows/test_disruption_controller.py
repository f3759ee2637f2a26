"""The disruption controller workflow: decide, validate after 15 s on fresh state, then act; a command that
changed during validation is abandoned. After a quiet round it waits for a `wake` (or its backstop), after
a busy one it polls. Its stored histories replay against today's code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import WorkflowHandle, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.disruption.decision import DecideInput, DisruptionRound
from activities.disruption.execution import (
    AbortInput,
    LaunchReplacementsInput,
    ReplacementsState,
    SignalInput,
    StartInput,
)
from activities.disruption.manual_replacement import LaunchManualInput, ManualPlan, ManualRequest
from scheduling.disruption import CandidateRef, Command
from scheduling.types import PlannedNodeClaim
from tests.eventually import eventually_async
from tests.workflows.histories import save_history
from tests.workflows.workers import worker_on_fresh_queue
from workers.temporal.workflow_runner import CompactWorkflowRunner
from workflows import disruption
from workflows.disruption import (
    HANDOVER,
    IDLE_BACKSTOP,
    POLL,
    VALIDATION,
    WORKFLOW_ID,
    DisruptionControllerWorkflow,
    DisruptionSettings,
    DisruptionState,
    wake_disruption_controller,
)

HISTORIES = Path(__file__).parent / "histories" / "disruption"


def empty_node(*names: str) -> Command:
    candidates = [CandidateRef(node=f"node-{name}", node_claim=name, node_pool="default") for name in names]
    return Command(method="Emptiness", reason="Empty", action="Delete", candidates=candidates, message="empty")


def cheaper(name: str) -> Command:
    candidate = CandidateRef(node=f"node-{name}", node_claim=name, node_pool="default", price=0.4)
    planned = PlannedNodeClaim(
        node_pool="default", instance_types=["c5.large"], requirements=[], pods=["default/web-1"], price=0.085
    )
    return Command(
        method="SingleNodeConsolidation",
        reason="Underutilized",
        action="Replace",
        candidates=[candidate],
        replacements=[planned],
        message="cheaper",
    )


class Cluster:
    """What the stand-in activities answer: one decision per call, in order, then none."""

    def __init__(
        self, decisions: list[Command | None], replacement_fails: bool = False, disrupting: tuple[str, ...] = ()
    ) -> None:
        self.decisions = decisions
        self.replacement_fails = replacement_fails
        self.disrupting = disrupting  # claims plan_manual_replacement finds already being disrupted
        self.decided = 0
        self.handed_over: list[list[str]] = []  # each decision's `handed_over`
        self.started: list[list[str]] = []
        self.calls: list[str] = []
        self.polls = 0
        self.signalled: list[SignalInput] = []
        self.waiters: list[str] = []  # the `waiter` of each launch
        self.replacement_up: bool | None = None  # set: the replacement is Initialized exactly when True

    def activities(self) -> list[object]:
        cluster = self

        @activity.defn(name="decide_disruption")
        def decide_disruption(inp: DecideInput) -> DisruptionRound:
            cluster.decided += 1
            cluster.handed_over.append(inp.handed_over)
            command = cluster.decisions.pop(0) if cluster.decisions else None
            return DisruptionRound(command=command, executable=command is not None)

        @activity.defn(name="start_disruption")
        def start_disruption(inp: StartInput) -> list[str]:
            names = [c.node_claim for c in inp.command.candidates]
            cluster.started.append(names)
            cluster.calls.append("start")
            return names

        @activity.defn(name="launch_replacements")
        def launch_replacements(inp: LaunchReplacementsInput) -> list[str]:
            cluster.calls.append("launch")
            cluster.waiters.append(inp.waiter)
            return [f"default-r{inp.round.round}"]

        @activity.defn(name="replacements_state")
        def replacements_state(names: list[str]) -> ReplacementsState:
            cluster.polls += 1
            if cluster.replacement_fails:
                return ReplacementsState(gone=names)
            if cluster.replacement_up is False or (cluster.replacement_up is None and cluster.polls < 3):
                return ReplacementsState(waiting=names)
            cluster.calls.append("initialized")
            return ReplacementsState(initialized=names)

        @activity.defn(name="abort_disruption")
        def abort_disruption(inp: AbortInput) -> None:
            cluster.calls.append(f"abort:{','.join(inp.replacements)}")

        @activity.defn(name="signal_disruption")
        def signal_disruption(inp: SignalInput) -> list[str]:
            cluster.signalled.append(inp)
            cluster.calls.append("signal")
            return inp.names

        @activity.defn(name="plan_manual_replacement")
        def plan_manual_replacement(request: ManualRequest) -> ManualPlan:
            cluster.calls.append(f"plan:{request.node_claim}")
            if request.node_claim in cluster.disrupting:
                return ManualPlan(skipped=f"NodeClaim {request.node_claim} is already being disrupted")
            candidate = CandidateRef(
                node=f"node-{request.node_claim}", node_claim=request.node_claim, node_pool="default"
            )
            command = Command(
                method="Manual", reason="Manual", action="Replace", candidates=[candidate], message=request.reason
            )
            return ManualPlan(command=command)

        @activity.defn(name="launch_manual_replacements")
        def launch_manual_replacements(inp: LaunchManualInput) -> list[str]:
            cluster.calls.append("launch_manual")
            cluster.waiters.append(inp.waiter)
            return [f"default-m{inp.round.round}-{name}" for name in inp.names]

        return [
            plan_manual_replacement,
            launch_manual_replacements,
            decide_disruption,
            start_disruption,
            launch_replacements,
            replacements_state,
            abort_disruption,
            signal_disruption,
        ]


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    from tests.workflows.conftest import start_time_skipping

    async with await start_time_skipping() as started:
        yield started


async def run_rounds(
    env: WorkflowEnvironment, cluster: Cluster, rounds: int, history: str, replace: tuple[str, ...] = ()
) -> DisruptionState:
    """Run the controller until `rounds` rounds are done; `replace`: NodeClaims whose manual replace is
    signalled right after the start (twice each: the second is deduplicated)."""
    async with worker_on_fresh_queue(env.client, [DisruptionControllerWorkflow], cluster.activities()) as queue:
        handle = await env.client.start_workflow(
            DisruptionControllerWorkflow.run, DisruptionState(), id=WORKFLOW_ID, task_queue=queue
        )
        for name in [*replace, *replace]:
            await handle.signal(DisruptionControllerWorkflow.replace, args=[name, f"roll {name}"])
        state: DisruptionState = await handle.query(DisruptionControllerWorkflow.status)
        while state.rounds < rounds:
            await env.sleep(10)
            state = await handle.query(DisruptionControllerWorkflow.status)
        await handle.terminate("test over")
        await save_history(handle, history, HISTORIES)
        return state


async def test_a_command_still_decided_after_validation_is_executed(env: WorkflowEnvironment) -> None:
    cluster = Cluster([empty_node("a"), empty_node("a")])
    state = await run_rounds(env, cluster, 2, "disruption-executed")
    assert cluster.started == [["a"]]
    assert "signalled a" in state.recent[0]


async def test_every_candidate_of_a_command_is_signalled_in_one_activity(env: WorkflowEnvironment) -> None:
    names = [f"n{i}" for i in range(5)]
    cluster = Cluster([empty_node(*names), empty_node(*names)])
    state = await run_rounds(env, cluster, 2, "disruption-executed-many")
    assert cluster.started == [names]
    assert [s.names for s in cluster.signalled] == [names]
    assert cluster.signalled[0].reason == "disrupted: Empty (Emptiness)"
    assert state.recent[0].endswith(f"signalled {', '.join(names)}")


async def test_a_command_that_changed_during_validation_is_abandoned(env: WorkflowEnvironment) -> None:
    cluster = Cluster([empty_node("a"), empty_node("b")])  # node a gained a pod; now b is the empty one
    state = await run_rounds(env, cluster, 2, "disruption-abandoned")
    assert cluster.started == []
    assert state.recent[0].startswith("abandoned after validation")


async def rounds_after(env: WorkflowEnvironment, handle: WorkflowHandle[Any, Any], seconds: float) -> int:
    """The controller's round counter once `seconds` of workflow time have passed."""
    await env.sleep(seconds)
    state: DisruptionState = await handle.query(DisruptionControllerWorkflow.status)
    return state.rounds


async def test_a_quiet_controller_waits_for_a_wake_or_its_backstop_not_the_poll(env: WorkflowEnvironment) -> None:
    cluster = Cluster([])
    async with worker_on_fresh_queue(env.client, [DisruptionControllerWorkflow], cluster.activities()) as queue:
        handle = await env.client.start_workflow(
            DisruptionControllerWorkflow.run, DisruptionState(), id=WORKFLOW_ID, task_queue=queue
        )
        assert await rounds_after(env, handle, 1) == 1  # the first round at once: no command, quiet
        assert await rounds_after(env, handle, 6 * POLL.total_seconds()) == 1
        await handle.signal(DisruptionControllerWorkflow.wake)
        assert await rounds_after(env, handle, 1) == 2
        assert cluster.decided == 2
        assert await rounds_after(env, handle, IDLE_BACKSTOP.total_seconds()) == 3
        state: DisruptionState = await handle.query(DisruptionControllerWorkflow.status)
        assert state.recent == ["no command; rejected: none"]  # the same finding, recorded once
        await handle.terminate("test over")
        await save_history(handle, "disruption-woken", HISTORIES)


async def test_after_a_round_that_acted_the_controller_polls(env: WorkflowEnvironment) -> None:
    cluster = Cluster([empty_node("a"), empty_node("a")])
    async with worker_on_fresh_queue(env.client, [DisruptionControllerWorkflow], cluster.activities()) as queue:
        handle = await env.client.start_workflow(
            DisruptionControllerWorkflow.run, DisruptionState(), id=WORKFLOW_ID, task_queue=queue
        )
        assert await rounds_after(env, handle, 20) == 1  # decided, validated for 15 s, executed
        assert cluster.started == [["a"]]
        assert await rounds_after(env, handle, POLL.total_seconds()) == 2  # no wake needed
        assert cluster.decided == 3
        await handle.terminate("test over")


async def test_decisions_after_a_command_know_its_candidates_are_handed_over_for_a_while(
    env: WorkflowEnvironment,
) -> None:
    cluster = Cluster([empty_node("a"), empty_node("a")])
    async with worker_on_fresh_queue(env.client, [DisruptionControllerWorkflow], cluster.activities()) as queue:
        handle = await env.client.start_workflow(
            DisruptionControllerWorkflow.run, DisruptionState(), id=WORKFLOW_ID, task_queue=queue
        )
        assert await rounds_after(env, handle, 20) == 1  # decided, validated, executed: "a" signalled
        assert await rounds_after(env, handle, POLL.total_seconds()) == 2
        assert cluster.handed_over == [[], [], ["a"]], "its taint is in use while its workflow starts deleting"
        await env.sleep(HANDOVER.total_seconds())
        await handle.signal(DisruptionControllerWorkflow.wake)
        assert await rounds_after(env, handle, 1) == 3
        assert cluster.handed_over[-1] == [], "handed over long enough ago: a taint left now is stale"
        await handle.terminate("test over")
        await save_history(handle, "disruption-handed-over", HISTORIES)


async def test_a_wake_restarts_a_controller_terminated_by_hand_with_the_leaders_settings(
    env: WorkflowEnvironment,
) -> None:
    cluster = Cluster([])
    settings = DisruptionSettings(executable_methods=["Emptiness"])
    async with worker_on_fresh_queue(env.client, [DisruptionControllerWorkflow], cluster.activities()) as queue:
        await wake_disruption_controller(env.client, queue, settings)
        handle = env.client.get_workflow_handle(WORKFLOW_ID)
        assert await rounds_after(env, handle, 1) == 1
        await handle.terminate("an operator resets it")
        await wake_disruption_controller(env.client, queue, settings)
        restarted = env.client.get_workflow_handle(WORKFLOW_ID)
        assert await rounds_after(env, restarted, 1) == 1
        state: DisruptionState = await restarted.query(DisruptionControllerWorkflow.status)
        assert state.settings == settings
        await restarted.terminate("test over")


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("*.json")), ids=lambda p: p.stem)
async def test_stored_history_replays(path: Path) -> None:
    replayer = Replayer(
        workflows=[DisruptionControllerWorkflow],
        data_converter=pydantic_data_converter,
        unsandboxed_workflow_runner=CompactWorkflowRunner(),
    )
    await replayer.replay_workflow(WorkflowHistory.from_json(path.stem, path.read_text()))


def test_there_are_stored_histories() -> None:
    assert len(list(HISTORIES.glob("*.json"))) >= 2


async def test_a_replace_launches_then_waits_for_its_replacement_before_draining(env: WorkflowEnvironment) -> None:
    cluster = Cluster([cheaper("a"), cheaper("a")])
    state = await run_rounds(env, cluster, 2, "disruption-replaced")
    assert cluster.calls == ["start", "launch", "initialized", "signal"]
    assert "replacements default-r0 initialized; signalled a" in state.recent[0]


async def test_a_replacement_ready_signal_has_the_replacements_looked_at_again_at_once(
    env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replacement's NodeClaim workflow (started with the controller as its waiter) signals
    `replacement_ready` once it is Initialized: the old node is drained then, not at the next poll."""
    monkeypatch.setattr(disruption, "REPLACEMENT_POLL_FIRST", timedelta(hours=1))  # so only the signal ends the wait
    cluster = Cluster([cheaper("a"), cheaper("a")])
    cluster.replacement_up = False
    async with worker_on_fresh_queue(env.client, [DisruptionControllerWorkflow], cluster.activities()) as queue:
        handle = await env.client.start_workflow(
            DisruptionControllerWorkflow.run, DisruptionState(), id=WORKFLOW_ID, task_queue=queue
        )
        await env.sleep(VALIDATION.total_seconds() + 1)
        await eventually_async(lambda: _true(cluster.polls == 1), timeout=30, what="the first look, waiting")
        assert cluster.waiters == [WORKFLOW_ID]
        started = await env.get_current_time()
        cluster.replacement_up = True
        await handle.signal(DisruptionControllerWorkflow.replacement_ready, "default-r0")
        await eventually_async(lambda: _true("signal" in cluster.calls), timeout=30, what="the old node signalled")
        assert await env.get_current_time() - started < timedelta(minutes=1)
        assert cluster.polls == 2 and cluster.calls == ["start", "launch", "initialized", "signal"]
        await handle.terminate("test over")
        await save_history(handle, "disruption-replacement-ready", HISTORIES)


async def _true(condition: bool) -> bool:
    assert condition
    return True


async def test_a_replacement_that_fails_rolls_the_command_back(env: WorkflowEnvironment) -> None:
    cluster = Cluster([cheaper("a"), cheaper("a")], replacement_fails=True)
    state = await run_rounds(env, cluster, 2, "disruption-rolled-back")
    assert cluster.calls == ["start", "launch", "abort:default-r0"]
    assert state.recent[0].startswith("rolled back") and "failed to launch" in state.recent[0]


async def test_a_manual_replace_runs_before_the_decision_through_the_replace_steps(env: WorkflowEnvironment) -> None:
    cluster = Cluster([])
    state = await run_rounds(env, cluster, 2, "disruption-manual-replace", replace=("a",))
    assert cluster.calls == ["plan:a", "start", "launch_manual", "initialized", "signal"]
    assert cluster.started == [["a"]]
    replacement = cluster.signalled[0]
    assert replacement.names == ["a"]
    assert replacement.reason.startswith("replaced by default-m") and replacement.reason.endswith("(roll a)")
    (line,) = [line for line in state.recent if line.startswith("Manual")]
    assert line.startswith("Manual Replace of a: executing; roll a; replacements default-m")
    assert state.manual == []


async def test_a_manual_replace_whose_replacement_fails_is_rolled_back(env: WorkflowEnvironment) -> None:
    cluster = Cluster([], replacement_fails=True)
    state = await run_rounds(env, cluster, 2, "disruption-manual-rolled-back", replace=("a",))
    assert cluster.calls[:3] == ["plan:a", "start", "launch_manual"]
    assert cluster.calls[3].startswith("abort:default-m") and "signal" not in cluster.calls
    (line,) = [line for line in state.recent if line.startswith("rolled back")]
    assert line.startswith("rolled back: Manual Replace of a") and "failed to launch" in line


async def test_a_manual_replace_of_a_claim_being_disrupted_is_skipped_and_recorded(env: WorkflowEnvironment) -> None:
    cluster = Cluster([], disrupting=("a",))
    state = await run_rounds(env, cluster, 2, "disruption-manual-skipped", replace=("a", "b"))
    assert [c for c in cluster.calls if c.startswith("plan")] == ["plan:a", "plan:b"]  # each once, in order
    assert cluster.started == [["b"]]
    assert "manual replace of a skipped: NodeClaim a is already being disrupted" in state.recent
