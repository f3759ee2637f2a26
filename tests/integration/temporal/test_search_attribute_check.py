"""The worker's start-up check of its namespace's search attributes (workers.temporal.search_attribute_check)
against a real Temporal dev server: the `default` namespace has nodeflow's (as the local stack registers
them), namespaces registered afterwards have none or some of another type."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client

from tests.workflows.conftest import dev_server
from workers.settings import Settings
from workers.temporal.client import TemporalSettingError, connect
from workers.temporal.search_attribute_check import check_search_attributes
from workflows import search_attributes as sa

REPO = Path(__file__).resolve().parents[3]
FAIL_WITHIN_SECONDS = 10.0
BARE = "no-search-attributes"
MIXED = "mixed-search-attributes"


async def register_namespaces(address: str) -> None:
    """BARE without custom search attributes; MIXED with NodePool as Text and Zone as Keyword."""
    client = await Client.connect(address)
    for namespace in (BARE, MIXED):
        retention = Duration(seconds=86400)
        await client.workflow_service.register_namespace(
            RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=retention)
        )
    text, keyword = IndexedValueType.INDEXED_VALUE_TYPE_TEXT, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(namespace=MIXED, search_attributes={"NodePool": text, "Zone": keyword})
    )


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with dev_server([(key.name, "Keyword") for key in sa.ALL]) as server:
        asyncio.run(register_namespaces(server.address))
        yield server.address


def test_a_worker_on_a_namespace_without_them_exits_within_10s_with_both_commands_and_the_first_works(
    address: str,
) -> None:
    # No Kubernetes and no AWS are configured: the check runs right after connecting, before either is used.
    # Every port of the worker's own is off, so nothing else on the machine gets in the way.
    argv = [sys.executable, "-m", "workers.cli", "worker", "--temporal-address", address, "--temporal-namespace", BARE,
            "--temporal-metrics-port", "0", "--metrics-port", "0", "--health-probe-port", "0"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NODEFLOW_", "KUBE"))} | {"PYTHONPATH": str(REPO)}
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert elapsed < FAIL_WITHIN_SECONDS, f"{elapsed:.1f}s"
    assert "Traceback" not in done.stderr, done.stderr
    names = " ".join(f"--name {key.name} --type Keyword" for key in sa.ALL)
    attributes = " ".join(f'--search-attribute "{key.name}=Keyword"' for key in sa.ALL)
    assert f"temporal operator search-attribute create --address {address} --namespace {BARE} {names}" in done.stderr, (
        done.stderr
    )
    assert f"tcld namespace search-attributes add --namespace {BARE} {attributes}" in done.stderr, done.stderr
    assert f"namespace '{BARE}' at {address} lacks {', '.join(key.name for key in sa.ALL)}" in done.stderr

    # The self-hosted command, as printed, creates them: the check then passes.
    command = next(line for line in done.stderr.splitlines() if "temporal operator" in line).split(": ", 1)[1]
    temporal = Path(sys.executable).parent / "temporal"
    subprocess.run([str(temporal), *shlex.split(command)[1:]], check=True, capture_output=True, timeout=60)
    settings = Settings(temporal_address=address, temporal_namespace=BARE)
    asyncio.run(passes(settings))


async def passes(settings: Settings) -> None:
    await check_search_attributes(await connect(settings), settings)


async def test_an_attribute_of_another_type_is_named_with_how_to_free_it(address: str) -> None:
    settings = Settings(temporal_address=address, temporal_namespace=MIXED)
    with pytest.raises(TemporalSettingError) as caught:
        await check_search_attributes(await connect(settings), settings)
    message = str(caught.value)
    assert "lacks InstanceType, CapacityType, NodeName, Phase and has NodePool as Text (not Keyword)" in message
    assert (
        "--name NodePool --type Keyword --name InstanceType --type Keyword --name CapacityType --type Keyword "
        "--name NodeName --type Keyword --name Phase --type Keyword" in message
    )
    assert "--name Zone " not in message  # Zone is there, as Keyword
    assert (
        f"temporal operator search-attribute remove --address {address} --namespace {MIXED} --name NodePool" in message
    )
    assert f"tcld namespace search-attributes rename --namespace {MIXED} --existing-name NodePool" in message


async def test_a_namespace_with_them_passes(address: str) -> None:
    await passes(Settings(temporal_address=address))
