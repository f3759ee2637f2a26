"""workers.health: /healthz and /readyz answers from their checks, over a real socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from workers.health import Check, HealthServer, run_checks


class Flags:
    """Checks whose outcome the test sets."""

    def __init__(self) -> None:
        self.worker = True
        self.temporal = True
        self.hang = False

    async def worker_running(self) -> str | None:
        return None if self.worker else "the Temporal worker is not running"

    async def temporal_ok(self) -> str | None:
        if self.hang:
            await asyncio.Event().wait()
        return None if self.temporal else "unreachable"

    async def broken(self) -> str | None:
        raise RuntimeError("boom")


@pytest.fixture
def flags() -> Flags:
    return Flags()


@pytest.fixture
async def server(flags: Flags) -> AsyncIterator[HealthServer]:
    endpoints: dict[str, dict[str, Check]] = {
        "/healthz": {"temporal-worker": flags.worker_running},
        "/readyz": {"temporal": flags.temporal_ok, "worker": flags.worker_running},
    }
    async with HealthServer(endpoints, port=0, host="127.0.0.1") as running:
        yield running


async def request(server: HealthServer, line: str) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(f"{line}\r\nHost: localhost\r\nUser-Agent: kube-probe/1.32\r\n\r\n".encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    head, _, body = raw.decode().partition("\r\n\r\n")
    return int(head.split()[1]), body


async def test_both_endpoints_answer_ok_when_their_checks_pass(server: HealthServer) -> None:
    assert await request(server, "GET /healthz HTTP/1.1") == (200, "ok\n")
    assert await request(server, "GET /readyz?verbose HTTP/1.1") == (200, "ok\n")


async def test_a_failing_check_is_503_naming_it(server: HealthServer, flags: Flags) -> None:
    flags.temporal = False
    assert await request(server, "GET /healthz HTTP/1.1") == (200, "ok\n")  # liveness does not ask Temporal
    assert await request(server, "GET /readyz HTTP/1.1") == (503, "temporal: unreachable\n")
    flags.worker = False
    status, body = await request(server, "GET /healthz HTTP/1.1")
    assert status == 503 and body == "temporal-worker: the Temporal worker is not running\n"


async def test_a_hanging_check_fails_within_its_timeout(flags: Flags) -> None:
    flags.hang = True
    endpoints: dict[str, dict[str, Check]] = {"/readyz": {"temporal": flags.temporal_ok}}
    async with HealthServer(endpoints, port=0, host="127.0.0.1", check_timeout=0.1) as server:
        assert await request(server, "GET /readyz HTTP/1.1") == (503, "temporal: no answer within 0.1s\n")


async def test_other_paths_methods_and_garbage(server: HealthServer) -> None:
    assert (await request(server, "GET /metrics HTTP/1.1"))[0] == 404
    assert (await request(server, "POST /healthz HTTP/1.1"))[0] == 405
    assert (await request(server, "nonsense"))[0] == 400
    status, body = await request(server, "HEAD /healthz HTTP/1.1")
    assert (status, body) == (200, "")


async def test_a_raising_check_fails_with_its_error(flags: Flags) -> None:
    assert await run_checks({"a": flags.broken, "b": flags.worker_running}) == {"a": "RuntimeError: boom"}
