"""Workers for workflow tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from workers.temporal.workflow_runner import CompactWorkflowRunner


@asynccontextmanager
async def worker_on_fresh_queue(
    client: Client,
    workflows: Sequence[type],
    activities: Sequence[Callable[..., Any]],
    prefix: str = "tq",
    max_cached_workflows: int = 1000,
) -> AsyncIterator[str]:
    """A worker with these workflows and activities on a new task queue, for the duration of the block;
    yields the task queue. `max_cached_workflows` 0: no workflow stays cached, each task replays its
    run's history."""
    task_queue = f"{prefix}-{uuid.uuid4()}"
    with ThreadPoolExecutor(max_workers=8) as executor:
        async with Worker(
            client,
            task_queue=task_queue,
            workflows=workflows,
            activities=activities,
            activity_executor=executor,
            max_cached_workflows=max_cached_workflows,
            unsandboxed_workflow_runner=CompactWorkflowRunner(),
        ):
            yield task_queue
