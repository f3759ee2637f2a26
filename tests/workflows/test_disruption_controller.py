"""The disruption controller workflow: decide, validate after 15 s on fresh state, then act; a command that
changed during validation is abandoned. Its stored histories replay against today's code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.disruption import DecideInput, DisruptionRound, StartInput
from scheduling.disruption import CandidateRef, Command
from tests.workflows.histories import save_history
from tests.workflows.workers import worker_on_fresh_queue
from workflows.disruption import WORKFLOW_ID, DisruptionControllerWorkflow, DisruptionState

HISTORIES = Path(__file__).parent / "histories" / "disruption"


def empty_node(name: str) -> Command:
    candidate = CandidateRef(node=f"node-{name}", node_claim=name, node_pool="default")
    return Command(method="Emptiness", reason="Empty", action="Delete", candidates=[candidate], message="empty")


class Cluster:
    """What the stand-in activities answer: one decision per call, in order, then none."""

    def __init__(self, decisions: list[Command | None]) -> None:
        self.decisions = decisions
        self.started: list[list[str]] = []

    def activities(self) -> list[object]:
        cluster = self

        @activity.defn(name="decide_disruption")
        def decide_disruption(inp: DecideInput) -> DisruptionRound:
            command = cluster.decisions.pop(0) if cluster.decisions else None
            return DisruptionRound(command=command, executable=command is not None)

        @activity.defn(name="start_disruption")
        def start_disruption(inp: StartInput) -> list[str]:
            names = [c.node_claim for c in inp.command.candidates]
            cluster.started.append(names)
            return names

        return [decide_disruption, start_disruption]


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    from tests.workflows.conftest import venv_binary

    async with await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=venv_binary("temporal-test-server"), data_converter=pydantic_data_converter
    ) as started:
        yield started


async def run_rounds(env: WorkflowEnvironment, cluster: Cluster, rounds: int, history: str) -> DisruptionState:
    async with worker_on_fresh_queue(env.client, [DisruptionControllerWorkflow], cluster.activities()) as queue:
        handle = await env.client.start_workflow(
            DisruptionControllerWorkflow.run, DisruptionState(), id=WORKFLOW_ID, task_queue=queue
        )
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


async def test_a_command_that_changed_during_validation_is_abandoned(env: WorkflowEnvironment) -> None:
    cluster = Cluster([empty_node("a"), empty_node("b")])  # node a gained a pod; now b is the empty one
    state = await run_rounds(env, cluster, 2, "disruption-abandoned")
    assert cluster.started == []
    assert state.recent[0].startswith("abandoned after validation")


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("*.json")), ids=lambda p: p.stem)
async def test_stored_history_replays(path: Path) -> None:
    replayer = Replayer(workflows=[DisruptionControllerWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(WorkflowHistory.from_json(path.stem, path.read_text()))


def test_there_are_stored_histories() -> None:
    assert len(list(HISTORIES.glob("*.json"))) >= 2
