"""Every stored history replays against today's workflow code; a known-bad one must not."""

from __future__ import annotations

import base64
import json

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from tests.workflows.histories import DIR
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.provisioner import ProvisionerWorkflow

HISTORIES = sorted(DIR.glob("*.json"))


def replayer() -> Replayer:
    return Replayer(workflows=[NodeClaimWorkflow, ProvisionerWorkflow], data_converter=pydantic_data_converter)


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_stored_history_replays(path) -> None:  # type: ignore[no-untyped-def]
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    await replayer().replay_workflow(history)


async def test_a_history_whose_commands_differ_fails_replay() -> None:
    """The lifecycle history with its first activity renamed: replay must detect the mismatch."""
    raw = json.loads((DIR / "nodeclaim-lifecycle.json").read_text())
    for event in raw["events"]:
        attrs = event.get("activityTaskScheduledEventAttributes")
        if attrs and attrs["activityType"]["name"] == "launch":
            attrs["activityType"]["name"] = "launch_v0"
            break
    history = WorkflowHistory.from_json("bad", json.dumps(raw))
    with pytest.raises(NondeterminismError):
        await replayer().replay_workflow(history)


def test_there_are_stored_histories() -> None:
    assert len(HISTORIES) >= 5


async def test_a_drift_history_without_its_patch_marker_fails_replay() -> None:
    """Drift checks are behind `workflow.patched`: replaying that history as if recorded before the patch
    takes the old branch, whose commands differ, so the guard is what keeps old histories replaying."""
    raw = json.loads((DIR / "nodeclaim-running-drift.json").read_text())
    raw["events"] = [e for e in raw["events"] if e.get("eventType") != "EVENT_TYPE_MARKER_RECORDED"]
    for event_id, event in enumerate(raw["events"], start=1):
        event["eventId"] = str(event_id)
    history = WorkflowHistory.from_json("unpatched", json.dumps(raw))
    with pytest.raises(NondeterminismError):
        await replayer().replay_workflow(history)


async def test_a_revision_1_history_replayed_as_revision_0_fails() -> None:
    """Runs of revision 1 skip the patch markers and do one `running_check` per cycle: the revision recorded
    in the run's input is what selects that code, so the same history read as revision 0 must not replay."""
    raw = json.loads((DIR / "nodeclaim-running-drift-v4-second-run.json").read_text())
    payload = raw["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]
    inp = json.loads(base64.b64decode(payload["data"]))
    assert inp["revision"] == 1
    payload["data"] = base64.b64encode(json.dumps({**inp, "revision": 0}).encode()).decode()
    history = WorkflowHistory.from_json("revision-0", json.dumps(raw))
    with pytest.raises(NondeterminismError):
        await replayer().replay_workflow(history)
