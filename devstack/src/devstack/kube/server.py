"""``KubeApiServer``: the emulated Kubernetes API over real HTTP, in a thread of its own.

Usage::

    with KubeApiServer() as api:              # port 0 = any free port
        cfg = kubernetes.client.Configuration(); cfg.host = api.url
        ...
        api.emulator.store.get(catalog.POD, "default", "p1")   # in-process assertions
        api.emulator["get /api/v1/nodes"][:1] << 503           # fault injection (kmock DSL)

With ``tokens`` (bearer token -> ``devstack.kube.rbac.User``) the server authenticates every request
and authorizes it with RBAC (see :mod:`devstack.kube.access`; the bootstrap ClusterRoles are created at
start); without, it serves every request unchecked (for the emulator's own tests).

The emulator, its controllers and every request run on one asyncio loop in the server thread;
callers on other threads must not touch ``emulator`` state while requests are in flight except
through ``call(fn)``, which runs ``fn`` on that loop and returns its result.

The HTTP listener is aiohttp's low-level server serving the kmock handler (what ``kmock.Server``
wraps) with handler cancellation on, so a watch whose client disconnects ends at once; unlike
``kmock.Server`` it does not patch aiohttp's resolver process-wide, so several servers can run in
one process and stop in any order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

import aiohttp.web

from devstack.kube import access, rbac, tls
from devstack.kube.controllers import ControllerManager
from devstack.kube.emulator import ApiServerEmulator
from devstack.kube.store import ObjectStore

T = TypeVar("T")
_START_TIMEOUT_SECONDS = 15.0


class KubeApiServer:
    """The emulated API server; ``start()`` returns once it serves, ``stop()`` joins its thread."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        controllers: bool = True,
        request_log_limit: int = 10_000,
        watch_history: int = 10_000,
        tokens: Mapping[str, rbac.User] | None = None,
        authz_log: Path | None = None,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        """``watch_history``: events kept per resource for watches from a resourceVersion (older: 410).
        ``tokens``: authenticate and authorize (see the module docstring); ``authz_log``: the directory
        of the authorization log (see :mod:`devstack.kube.access`), with ``tokens`` only. ``tls``: (certificate,
        private key) files: serve HTTPS (kubectl sends a kubeconfig's credentials over TLS only)."""
        self._tls = tls
        self._tokens = dict(tokens) if tokens is not None else None
        self._authz_log = authz_log
        self._host = host
        self._watch_history = watch_history
        self._port = port
        self._with_controllers = controllers
        self._request_log_limit = request_log_limit
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._emulator: ApiServerEmulator | None = None
        self._bound_port: int | None = None

    @property
    def url(self) -> str:
        """``http(s)://host:port`` of the running server (127.0.0.1 when listening on all addresses)."""
        if self._bound_port is None:
            raise RuntimeError("KubeApiServer is not started: call start() first")
        host = "127.0.0.1" if self._host in ("", "0.0.0.0") else self._host
        return f"{'https' if self._tls else 'http'}://{host}:{self._bound_port}"

    @property
    def emulator(self) -> ApiServerEmulator:
        if self._emulator is None:
            raise RuntimeError("KubeApiServer is not started: call start() first")
        return self._emulator

    def start(self) -> None:
        """Serve in a new thread; raises what prevented the server from starting (e.g. port in use)."""
        if self._thread is not None:
            raise RuntimeError("KubeApiServer.start() was already called")
        self._thread = threading.Thread(target=self._run, name="kube-api-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT_SECONDS):
            raise RuntimeError(f"the Kubernetes emulator did not start within {_START_TIMEOUT_SECONDS} s")
        if self._failure is not None:
            self._thread.join()
            raise self._failure

    def stop(self) -> None:
        """Stop serving and join the thread (idempotent)."""
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._thread = None

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` on the server loop (safe access to emulator state) and return its result."""
        if self._loop is None:
            raise RuntimeError("KubeApiServer is not started: call start() first")

        async def run() -> T:
            return fn()

        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(run(), self._loop)
        return future.result(10)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start(); the thread ends either way
            self._failure = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        store = ObjectStore(history_limit=self._watch_history)
        checks = None
        if self._tokens is not None:
            access.bootstrap(store)
            checks = access.Access(store, self._tokens, self._authz_log)
            store.admission = checks.admit
        emulator = ApiServerEmulator(store=store, request_log_limit=self._request_log_limit, access=checks)
        async with emulator:
            # No access log: a low-level Server takes it (its request handlers do), not the runner.
            server = aiohttp.web.Server(emulator, handler_cancellation=True, access_log=None)
            runner = aiohttp.web.ServerRunner(server)
            await runner.setup()
            try:
                ssl_context = tls.server_context(*self._tls) if self._tls else None
                site = aiohttp.web.TCPSite(runner, self._host, self._port, reuse_address=True, ssl_context=ssl_context)
                await site.start()
                self._bound_port = runner.addresses[0][1]
                manager = ControllerManager(emulator.store)
                if self._with_controllers:
                    manager.start()
                self._emulator = emulator
                self._ready.set()
                await self._stop.wait()
                await manager.stop()
            finally:
                # End live watch streams first: cleanup waits for every open request to finish.
                emulator.store.close_watches()
                transports = [handler.transport for handler in server.connections]
                await runner.cleanup()
                # A TLS connection's close waits for the peer's close_notify, which a client holding a
                # kept-alive connection never sends: abort what is left, and let the loop close the sockets.
                for transport in transports:
                    if transport is not None:
                        transport.abort()
                await asyncio.sleep(0)
