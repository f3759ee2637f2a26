"""workers.temporal.client.connect against a real Temporal dev server: plain, and over TLS through a
TLS-terminating proxy (the dev server serves plain gRPC only), with and without a client certificate.
Every failure is one line naming the setting, well within 10 seconds."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tls_certs import Pki, make_pki
from tests.tls_proxy import server_context, tls_proxy
from tests.workflows.conftest import dev_server
from workers.settings import Settings
from workers.temporal.client import TemporalSettingError, connect
from workers.temporal.namespace_owner import claim_namespace, namespace_owner
from workflows.garbage_collection import WORKFLOW_ID, GarbageCollectorState, GarbageCollectorWorkflow

FAIL_WITHIN_SECONDS = 10.0


@pytest.fixture(scope="module")
def dev_address() -> Iterator[str]:
    """An in-memory dev server the module's tests that only connect share; yields its plain gRPC address."""
    with dev_server() as server:
        yield server.address


@pytest.fixture
def fresh_dev_address() -> Iterator[str]:
    """A dev server of the test's own, for tests that start workflows in its namespace."""
    with dev_server() as server:
        yield server.address


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield port


async def refused(settings: Settings, timeout: float | None = None) -> str:
    """connect's one-line failure, asserted to come within FAIL_WITHIN_SECONDS."""
    started = time.monotonic()
    with pytest.raises(TemporalSettingError) as err:
        await (connect(settings) if timeout is None else connect(settings, timeout))
    assert time.monotonic() - started < FAIL_WITHIN_SECONDS
    assert "\n" not in str(err.value)
    return str(err.value)


# -- plain ------------------------------------------------------------------------------------------------


async def test_connects_and_finds_the_namespace(dev_address: str) -> None:
    client = await connect(Settings(temporal_address=dev_address))
    assert client.namespace == "default"


async def test_a_wrong_namespace_fails_at_connect(dev_address: str) -> None:
    message = await refused(Settings(temporal_address=dev_address, temporal_namespace="no-such-namespace"))
    assert message.startswith("temporal_namespace (flag --temporal-namespace, env NODEFLOW_TEMPORAL_NAMESPACE)")
    assert "no namespace 'no-such-namespace'" in message


async def test_an_unreachable_server_fails_at_once(closed_port: int) -> None:
    message = await refused(Settings(temporal_address=f"127.0.0.1:{closed_port}"))
    assert message.startswith("temporal_address (flag --temporal-address") and "connection refused" in message


async def test_a_server_that_never_answers_times_out() -> None:
    held: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # accept the connection, never answer

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        message = await refused(Settings(temporal_address=f"127.0.0.1:{port}"), timeout=1.0)
    finally:
        for writer in held:
            writer.close()
        server.close()
    assert message.startswith("temporal_address") and "did not answer within 1s" in message


async def test_plain_text_to_a_tls_server_says_tls_may_be_required(dev_address: str, pki: Pki) -> None:
    async with tls_proxy(dev_address, server_context(pki.server.cert, pki.server.key)) as address:
        message = await refused(Settings(temporal_address=address))
    assert message.startswith("temporal_tls (flag --temporal-tls") and "may require TLS" in message


# -- TLS --------------------------------------------------------------------------------------------------


async def test_tls_with_the_right_ca_connects(dev_address: str, pki: Pki) -> None:
    async with tls_proxy(dev_address, server_context(pki.server.cert, pki.server.key)) as address:
        client = await connect(Settings(temporal_address=address, temporal_tls_ca_file=str(pki.ca.cert)))
        await client.count_workflows()


async def test_tls_with_a_wrong_ca_fails_fast(dev_address: str, pki: Pki) -> None:
    async with tls_proxy(dev_address, server_context(pki.server.cert, pki.server.key)) as address:
        message = await refused(Settings(temporal_address=address, temporal_tls_ca_file=str(pki.other_ca.cert)))
    assert message.startswith("temporal_tls_ca_file (flag --temporal-tls-ca-file, env NODEFLOW_TEMPORAL_TLS_CA_FILE)")
    assert f"not signed by the CA in {pki.other_ca.cert}" in message


async def test_tls_with_a_wrong_server_name_fails(dev_address: str, pki: Pki) -> None:
    async with tls_proxy(dev_address, server_context(pki.server.cert, pki.server.key)) as address:
        settings = Settings(
            temporal_address=address, temporal_tls_ca_file=str(pki.ca.cert), temporal_tls_server_name="temporal.example"
        )
        message = await refused(settings)
    assert message.startswith("temporal_tls_server_name") and "'temporal.example'" in message


async def test_tls_to_a_plain_server_fails(dev_address: str, pki: Pki) -> None:
    message = await refused(Settings(temporal_address=dev_address, temporal_tls_ca_file=str(pki.ca.cert)))
    assert message.startswith("temporal_tls (flag") and "does not answer in TLS" in message


async def test_mutual_tls_with_the_client_certificate_connects(dev_address: str, pki: Pki) -> None:
    context = server_context(pki.server.cert, pki.server.key, client_ca=pki.ca.cert)
    async with tls_proxy(dev_address, context) as address:
        settings = Settings(
            temporal_address=address,
            temporal_tls_ca_file=str(pki.ca.cert),
            temporal_tls_cert_file=str(pki.client.cert),
            temporal_tls_key_file=str(pki.client.key),
        )
        client = await connect(settings)
        await client.count_workflows()


async def test_mutual_tls_without_a_client_certificate_fails(dev_address: str, pki: Pki) -> None:
    context = server_context(pki.server.cert, pki.server.key, client_ca=pki.ca.cert)
    async with tls_proxy(dev_address, context) as address:
        message = await refused(Settings(temporal_address=address, temporal_tls_ca_file=str(pki.ca.cert)))
    assert message.startswith("temporal_tls_cert_file") and "may require a client certificate" in message


async def test_mutual_tls_with_a_certificate_of_another_ca_fails(dev_address: str, pki: Pki) -> None:
    context = server_context(pki.server.cert, pki.server.key, client_ca=pki.ca.cert)
    async with tls_proxy(dev_address, context) as address:
        settings = Settings(
            temporal_address=address,
            temporal_tls_ca_file=str(pki.ca.cert),
            temporal_tls_cert_file=str(pki.other_ca.cert),
            temporal_tls_key_file=str(pki.other_ca.key),
        )
        message = await refused(settings)
    assert message.startswith("temporal_tls_cert_file")
    assert f"refused the client certificate {pki.other_ca.cert}" in message


# -- one cluster per namespace --------------------------------------------------------------------------


async def test_a_namespace_serves_one_cluster(fresh_dev_address: str) -> None:
    first = Settings(temporal_address=fresh_dev_address, cluster_name="blue")
    client = await connect(first)
    await claim_namespace(client, first)
    assert await namespace_owner(client) == (True, "blue")
    await claim_namespace(client, first)  # a second worker of the same cluster is welcome

    second = Settings(temporal_address=fresh_dev_address, cluster_name="green")
    with pytest.raises(TemporalSettingError) as err:
        await claim_namespace(client, second)
    message = str(err.value)
    assert message.startswith("temporal_namespace") and "belongs to cluster 'blue'" in message
    assert "cluster_name (flag --cluster-name, env NODEFLOW_CLUSTER_NAME) is 'green'" in message


async def test_a_collector_that_names_no_cluster_is_refused(fresh_dev_address: str) -> None:
    settings = Settings(temporal_address=fresh_dev_address, cluster_name="blue")
    client = await connect(settings)
    await client.start_workflow(  # as by hand, with the temporal CLI: no owner in the memo
        GarbageCollectorWorkflow.run, GarbageCollectorState(), id=WORKFLOW_ID, task_queue=settings.task_queue
    )
    with pytest.raises(TemporalSettingError) as err:
        await claim_namespace(client, settings)
    message = str(err.value)
    assert message.startswith("temporal_namespace") and "names no cluster" in message
    assert f"temporal workflow terminate --workflow-id {WORKFLOW_ID}" in message


# -- the commands ----------------------------------------------------------------------------------------


def nodeflow(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "nodeflow"), *argv]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    # the command's own budget, with room for the interpreter to import boto3 and temporalio on a busy machine
    assert time.monotonic() - started < FAIL_WITHIN_SECONDS + 10
    return result


def assert_one_line_failure(result: subprocess.CompletedProcess[str], setting: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and setting in lines[0], result.stderr


def test_the_worker_refuses_a_wrong_namespace_in_one_line(dev_address: str) -> None:
    # no Temporal metrics endpoint: its default port may be another process's on a shared machine
    argv = ("--temporal-address", dev_address, "--temporal-namespace", "nope", "--temporal-metrics-port", "0")
    result = nodeflow("worker", *argv)
    assert_one_line_failure(result, "temporal_namespace")


def test_status_with_a_missing_ca_file_fails_in_one_line(tmp_path: Path) -> None:
    result = nodeflow("status", "--temporal-tls-ca-file", str(tmp_path / "missing.pem"))
    assert_one_line_failure(result, "temporal_tls_ca_file")
    assert "no such file" in result.stderr


def test_status_against_an_unreachable_server_fails_in_one_line(closed_port: int) -> None:
    result = nodeflow("status", "--temporal-address", f"127.0.0.1:{closed_port}")
    assert_one_line_failure(result, "temporal_address")
