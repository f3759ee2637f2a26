"""The worker's health probes: `GET /healthz` (liveness) and `GET /readyz` (readiness) over plain HTTP,
on asyncio streams (no web framework).

Each endpoint runs its named checks concurrently, each within CHECK_TIMEOUT seconds; a check returns
None when it passes and a short reason when it fails (raising or timing out fails it too). The answer
is `200 ok` when all pass, else `503` with one `<check>: <reason>` line per failing check, as
Kubernetes probes expect (any 2xx/3xx passes). Any other path is 404. The answer coming at all proves
the event loop runs. `HEAD` is answered like `GET` without the body.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[str | None]]
CHECK_TIMEOUT = 2.0
REQUEST_TIMEOUT = 5.0
MAX_HEADER_LINES = 100
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


async def run_checks(checks: Mapping[str, Check], timeout: float = CHECK_TIMEOUT) -> dict[str, str]:
    """The failing checks of `checks`, by name, with their reasons (empty: all pass)."""

    async def one(check: Check) -> str | None:
        try:
            return await asyncio.wait_for(check(), timeout)
        except TimeoutError:
            return f"no answer within {timeout:g}s"
        except Exception as exc:  # a probe reports failures, it does not crash the server
            return f"{type(exc).__name__}: {exc}"

    names = list(checks)
    results = await asyncio.gather(*(one(checks[name]) for name in names))
    return {name: reason for name, reason in zip(names, results, strict=True) if reason is not None}


class HealthServer:
    """Serves `endpoints` ({"/healthz": {check name: check}, ...}) on `host`:`port` (port 0: any free
    port; `port` holds the bound one after `start`), each check within `check_timeout` seconds. Use
    `async with`, or `start()`/`close()`."""

    def __init__(
        self,
        endpoints: Mapping[str, Mapping[str, Check]],
        port: int,
        host: str = "0.0.0.0",
        check_timeout: float = CHECK_TIMEOUT,
    ) -> None:
        self.endpoints = endpoints
        self.check_timeout = check_timeout
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Listen; raises OSError when the port is taken."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("health probes on port %d: %s", self.port, ", ".join(self.endpoints))

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body, head = await asyncio.wait_for(self._answer(reader), REQUEST_TIMEOUT)
            data = body.encode()
            writer.write(
                f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
                + (b"" if head else data)
            )
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a client that left or never finished its request gets nothing
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, str, bool]:
        """(status, body, whether HEAD) for one request; the request's headers are read and ignored."""
        request_line = (await reader.readline()).decode("latin-1").split()
        for _ in range(MAX_HEADER_LINES):
            if (await reader.readline()) in (b"\r\n", b"\n", b""):
                break
        if len(request_line) != 3:
            return 400, "bad request\n", False
        method, target, _version = request_line
        head = method == "HEAD"
        checks = self.endpoints.get(target.split("?", 1)[0])
        if checks is None:
            return 404, "not found\n", head
        if method not in ("GET", "HEAD"):
            return 405, "method not allowed\n", head
        failing = await run_checks(checks, self.check_timeout)
        if not failing:
            return 200, "ok\n", head
        return 503, "".join(f"{name}: {reason}\n" for name, reason in failing.items()), head
