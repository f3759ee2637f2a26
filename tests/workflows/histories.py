"""Stored workflow histories for replay tests: the guard of the versioning policy (docs/architecture.md, "Versioning").

A history under histories/ is a run of the workflow code as released (before the first release: as the
code is now). Every one must keep replaying against today's code (tests/workflows/test_replay.py), so a
change to a workflow's command sequence that would break a run still open in some cluster fails there.

Recording: `NODEFLOW_RECORD_HISTORIES=1 pytest tests/workflows/<file>` writes the histories its tests save
that do not exist yet (new scenarios, or a patched branch's new commands beside the old ones). Overwriting
an existing history, `NODEFLOW_RECORD_HISTORIES=overwrite`, is legitimate only when no run recorded by
the code that made it can still be open: before the first release, or when a patch is removed one
release after it shipped (every run has continued as new onto the patched code since). Review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

from temporalio.client import WorkflowHandle

DIR = Path(__file__).parent / "histories"
RECORD = "NODEFLOW_RECORD_HISTORIES"


async def save_history(handle: WorkflowHandle, name: str, directory: Path = DIR) -> None:
    """Write the workflow's history to <directory>/<name>.json when recording is asked for (see the module
    docstring: an existing file is only replaced with RECORD=overwrite); when the workflow continued as
    new, its first run goes to <directory>/<name>-first-run.json too, and its second run, unless that is
    the last, to <directory>/<name>-second-run.json."""
    mode = os.environ.get(RECORD)
    if mode not in ("1", "overwrite"):
        return
    target = directory / f"{name}.json"
    if target.exists() and mode != "overwrite":
        return
    history = await handle.fetch_history()
    target.write_text(history.to_json())
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
