"""MotoServer: a patched, seeded moto server in a thread of this process (the AWS side of the local stack),
with the Pricing API's GetProducts in front of it (devstack.aws.pricing)."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.moto_api._internal.models import moto_api_backend
from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

from devstack.aws import access, patches, speedups
from devstack.aws.calls import CallRecorder, call_log_from_env
from devstack.aws.faults import FaultClient, FaultStore
from devstack.aws.pricing import PricingApp
from devstack.aws.request import WSGIApp
from devstack.aws.response_cache import ResponseCache
from devstack.aws.seed import seed, zones
from devstack.aws.wsgi import FaultInjectingApp


class _QuietHandler(MotoRequestHandler):
    """moto's request handler without a log line per request."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class MotoServer:
    """Start with `.start()` (or `with MotoServer() as aws:`); `.url` is the endpoint for every AWS client.

    `port=0` picks a free port. `start()` applies the patches, serves, seeds, and returns when ready.
    `seeded` holds the ids the seed created (vpc, subnets, securityGroup, role, clusterEndpoint).
    `cluster_endpoint` is the endpoint the seeded EKS cluster answers (None: moto's made-up one); set it
    before `start()`, e.g. to the Kubernetes emulator's URL. With `response_cache`
    (a directory), moto's unchanging answers are kept there across processes (devstack.aws.response_cache).
    With `call_log` (a directory; by default the one `DEVSTACK_AWS_CALL_LOG` names, if any), every AWS
    operation clients call is recorded there (devstack.aws.calls).
    With `worker_policy` (an IAM policy document), moto enforces it by action once seeded
    (devstack.aws.access): the worker signs with `controller_key` (user `nodeflow-controller`, whose only
    policy is its projection), everything else with "testing"/"testing" (the admin user). Without it moto
    answers any credentials, as moto does by default.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        cluster_name: str = "nodeflow-dev",
        region: str = "us-west-2",
        response_cache: Path | None = None,
        cluster_endpoint: str | None = None,
        call_log: Path | None = None,
        worker_policy: Mapping[str, Any] | None = None,
        cluster_ca: bytes | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.cluster_name = cluster_name
        self.region = region
        self.response_cache = response_cache
        self.cluster_endpoint = cluster_endpoint
        self.cluster_ca = cluster_ca
        self.call_log = call_log if call_log is not None else call_log_from_env()
        self.faults = FaultStore()
        self.seeded: dict[str, Any] = {}
        self.worker_policy = worker_policy
        self.controller_key: tuple[str, str] | None = access.new_key() if worker_policy is not None else None
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("MotoServer.url: call start() first")
        return f"http://{self.host}:{self._server.server_port}"

    def fault_client(self) -> FaultClient:
        return FaultClient(self.url)

    def start(self) -> MotoServer:
        if self._server is not None:
            return self
        patches.install()
        speedups.install()
        # moto keeps its resources in process-wide backends: start empty, so a server never serves what an
        # earlier server of this process created (two servers running at once in one process would share).
        moto_api_backend.reset()
        patches.offer_everywhere(self.region, zones(self.region))
        moto: WSGIApp = speedups.Dispatcher(create_backend_app, self.region)
        if self.response_cache is not None:
            moto = ResponseCache(moto, self.response_cache, access.permits if self.worker_policy is not None else None)
        app: WSGIApp = FaultInjectingApp(PricingApp(moto), self.faults)
        if self.call_log is not None:
            app = CallRecorder(app, self.call_log)
        self._server = make_server(self.host, self.port, app, threaded=True, request_handler=_QuietHandler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="moto-server", daemon=True
        )
        self._thread.start()
        access.suspend()  # an earlier server of this process may have left enforcement on
        self.seeded = seed(self.url, self.cluster_name, self.region, self.cluster_endpoint, self.cluster_ca)
        self._enforce()
        return self

    def _enforce(self) -> None:
        if self.worker_policy is not None and self.controller_key is not None:
            access.enforce(self.worker_policy, DEFAULT_ACCOUNT_ID, self.controller_key)  # moto's account

    def reset(self) -> None:
        """Wipe moto's state (moto-api reset), clear faults and fleet tokens, and seed again."""
        access.suspend()
        request = urllib.request.Request(self.url + "/moto-api/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass
        self.faults.clear()
        self.faults.clear_fleet_tokens()
        self.seeded = seed(self.url, self.cluster_name, self.region, self.cluster_endpoint, self.cluster_ca)
        self._enforce()  # the same keys: moto's reset removed the users

    def stop(self) -> None:
        if self._server is None:
            return
        if self.worker_policy is not None:
            access.suspend()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
