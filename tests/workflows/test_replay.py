"""Every stored history replays against today's workflow code; a known-bad one must not.

This is the guard of the versioning policy (docs/architecture.md, "Versioning"). When `test_stored_history_replays`
fails, the change altered a workflow's command sequence for runs that may still be open: put the new
commands behind `workflow.patched(<id>)` so the stored history takes the old branch, and record the new
branch as a new history. Re-recording the failing history instead is legitimate only as
tests/workflows/histories.py says (before the first release, or when removing a patch one release later).
"""

from __future__ import annotations

import json

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from tests.workflows.histories import DIR
from workers.temporal.workflow_runner import CompactWorkflowRunner
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.provisioner import ProvisionerWorkflow

HISTORIES = sorted(DIR.glob("*.json"))
NODECLAIM_SCENARIOS = (
    "lifecycle",
    "insufficient-capacity",
    "registration-timeout",
    "expired",
    "running-drift",
    "check-drift-signal",
    "drain-pdb",
    "replace",
    "repair",
)


def replayer() -> Replayer:
    return Replayer(
        workflows=[NodeClaimWorkflow, ProvisionerWorkflow],
        data_converter=pydantic_data_converter,
        unsandboxed_workflow_runner=CompactWorkflowRunner(),
    )


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_stored_history_replays(path) -> None:  # type: ignore[no-untyped-def]
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    try:
        await replayer().replay_workflow(history)
    except NondeterminismError as err:
        pytest.fail(
            f"{path.name} no longer replays: {err}. A run started by the code that recorded it would fail the "
            "same way. Guard the change with workflow.patched (see this module's docstring); re-record only "
            "as tests/workflows/histories.py allows."
        )


async def test_a_history_whose_commands_differ_fails_replay() -> None:
    """The lifecycle's first run (launch to Running) with its first activity renamed, as if recorded from a
    different command sequence: replay must detect the mismatch."""
    raw = json.loads((DIR / "nodeclaim-lifecycle-first-run.json").read_text())
    for event in raw["events"]:
        attrs = event.get("activityTaskScheduledEventAttributes")
        if attrs and attrs["activityType"]["name"] == "launch":
            attrs["activityType"]["name"] = "launch_v0"
            break
    else:
        pytest.fail("the lifecycle history schedules no `launch` activity")
    history = WorkflowHistory.from_json("bad", json.dumps(raw))
    with pytest.raises(NondeterminismError):
        await replayer().replay_workflow(history)


def test_every_scenario_has_a_stored_history() -> None:
    """Each NodeClaim scenario the workflow tests record, and the provisioner's, is stored: a missing one
    would leave its command sequence unguarded."""
    stored = {p.stem for p in HISTORIES}
    missing = [s for s in NODECLAIM_SCENARIOS if f"nodeclaim-{s}" not in stored]
    assert not missing and "provisioner-batch" in stored, f"record them: {missing}"
