"""Stored workflow histories for replay tests. Re-record them after an intentional, patched change with
`NODEFLOW_RECORD_HISTORIES=1 pytest tests/workflows` (then review the diff)."""

from __future__ import annotations

import os
from pathlib import Path

from temporalio.client import WorkflowHandle

DIR = Path(__file__).parent / "histories"


async def save_history(handle: WorkflowHandle, name: str) -> None:
    """Write the workflow's history to histories/<name>.json when recording is asked for."""
    if os.environ.get("NODEFLOW_RECORD_HISTORIES") != "1":
        return
    history = await handle.fetch_history()
    (DIR / f"{name}.json").write_text(history.to_json())
