"""Stored workflow histories for replay tests. Re-record them after an intentional, patched change with
`NODEFLOW_RECORD_HISTORIES=1 pytest tests/workflows` (then review the diff)."""

from __future__ import annotations

import os
from pathlib import Path

from temporalio.client import WorkflowHandle

DIR = Path(__file__).parent / "histories"


async def save_history(handle: WorkflowHandle, name: str, directory: Path = DIR) -> None:
    """Write the workflow's history to <directory>/<name>.json when recording is asked for; when the
    workflow continued as new, its first run goes to <directory>/<name>-first-run.json too, and its
    second run, unless that is the last, to <directory>/<name>-second-run.json."""
    if os.environ.get("NODEFLOW_RECORD_HISTORIES") != "1":
        return
    history = await handle.fetch_history()
    (directory / f"{name}.json").write_text(history.to_json())
    run_id = handle.first_execution_run_id
    for suffix in ("first-run", "second-run"):
        if not run_id:
            return
        run = await handle._client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
        continued = run.events[-1].workflow_execution_continued_as_new_event_attributes
        if not run.events[-1].HasField("workflow_execution_continued_as_new_event_attributes"):
            return
        (directory / f"{name}-{suffix}.json").write_text(run.to_json())
        run_id = continued.new_execution_run_id
