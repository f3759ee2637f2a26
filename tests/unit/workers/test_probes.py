"""workers.probes: what /healthz and /readyz of a worker check, with stand-ins for Temporal, the
Kubernetes API and the cloud provider."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from kube.errors import ForbiddenError, KubeError, ServerError
from kube.leases import LeaseClient
from tests.eventually import eventually_async
from workers import probes
from workers.health import run_checks
from workers.probes import CatalogWarmer, worker_probes


class Kube:
    """Answers every Lease read with a Lease, or raises `error` when set."""

    def __init__(self) -> None:
        self.error: KubeError | None = None

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        return {"metadata": {"resourceVersion": "1"}, "spec": {"holderIdentity": "x"}}


class Temporal:
    def __init__(self) -> None:
        self.healthy = True

    async def check_health(self, **_: Any) -> bool:
        if self.healthy is None:
            raise RuntimeError("connection refused")
        return self.healthy


class Cloud:
    def __init__(self, failures: int) -> None:
        self.failures = failures

    def instance_types(self, pool: Any) -> list[str]:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("DescribeInstanceTypes throttled")
        return ["m5.large", "c5.large"]


async def test_healthz_and_readyz_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probes, "CATALOG_RETRY_SECONDS", 0.0)
    kube, temporal = Kube(), Temporal()
    worker = SimpleNamespace(is_running=True, is_shutdown=False)
    catalog = CatalogWarmer(Cloud(failures=1))  # type: ignore[arg-type]
    server = worker_probes(
        8081,
        SimpleNamespace(service_client=temporal),
        worker,
        LeaseClient(kube, "ns", "l"),
        catalog,  # type: ignore[arg-type]
    )
    assert server is not None and server.port == 8081
    healthz, readyz = server.endpoints["/healthz"], server.endpoints["/readyz"]
    assert await run_checks(healthz) == {}
    assert await run_checks(readyz) == {"catalog": "the instance-type catalog is not loaded yet"}
    await asyncio.wait_for(catalog.run(), 5)  # the first load fails, the retry succeeds
    assert catalog.loaded and await run_checks(readyz) == {}

    kube.error = ForbiddenError("leases is forbidden")  # an answer all the same
    assert await run_checks(readyz) == {}
    kube.error = ServerError("connection refused")
    assert await run_checks(readyz) == {"kubernetes": "connection refused"}
    temporal.healthy = None  # type: ignore[assignment]
    assert set(await run_checks(readyz)) == {"kubernetes", "temporal"}

    worker.is_shutdown = True
    assert await run_checks(healthz) == {"temporal-worker": "the Temporal worker is not running"}


def test_port_0_is_no_server() -> None:
    assert worker_probes(0, None, None, None, None) is None  # type: ignore[arg-type]


async def test_a_catalog_that_keeps_failing_keeps_readyz_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probes, "CATALOG_RETRY_SECONDS", 0.01)
    cloud = Cloud(failures=10**9)
    catalog = CatalogWarmer(cloud)  # type: ignore[arg-type]
    task = asyncio.create_task(catalog.run())

    async def retried() -> bool:
        return cloud.failures < 10**9 - 3

    await eventually_async(retried, timeout=5, what="three retries")
    assert not catalog.loaded
    task.cancel()
