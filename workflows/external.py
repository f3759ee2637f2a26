"""Signalling another workflow from workflow code, where the other one may have ended. Deterministic: the
signal is a command in the sender's history (SignalExternalWorkflowExecution)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from temporalio import workflow


async def signal_workflow(workflow_id: str, signal: StrEnum, *args: Any) -> bool:
    """Signal `signal` with `args` to the running workflow `workflow_id`; False when it could not be
    signalled (it has ended, or never ran), for the caller to log as it sees fit."""
    try:
        await workflow.get_external_workflow_handle(workflow_id).signal(signal, args=list(args))
    except Exception:  # the server refused it: no such running workflow
        return False
    return True


__all__ = ["signal_workflow"]
