"""A TLS-terminating TCP proxy for tests: the Temporal dev server serves plain gRPC only, so the proxy
accepts TLS (optionally requiring a client certificate signed by a CA) and forwards the decrypted bytes to
the dev server. gRPC over HTTP/2 passes through unchanged, so the client's real TLS path is exercised.
ALPN offers h2, which the client's TLS stack asks for."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path


def server_context(cert: Path, key: Path, client_ca: Path | None = None) -> ssl.SSLContext:
    """The proxy's TLS: its certificate and key; with `client_ca`, clients must show a certificate it signed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    if client_ca is not None:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


@contextlib.asynccontextmanager
async def tls_proxy(target: str, context: ssl.SSLContext) -> AsyncIterator[str]:
    """Serve TLS on a free loopback port, forwarding each connection to `target` (host:port); yields the
    proxy's address. Failed handshakes are the client's problem and are dropped quietly."""
    host, port = target.rsplit(":", 1)

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        try:
            await asyncio.gather(_pipe(client_reader, server_writer), _pipe(server_reader, client_writer))
        except asyncio.CancelledError:  # the proxy is closing
            server_writer.close()
            client_writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    address = server.sockets[0].getsockname()
    try:
        yield f"127.0.0.1:{address[1]}"
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)
