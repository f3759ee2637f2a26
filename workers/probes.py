"""What the worker's health probes check (served by workers.health): liveness is the event loop
answering and the Temporal worker running; readiness is Temporal answering its health check, the
Kubernetes API answering, and the instance-type catalog loaded (`CatalogWarmer`)."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from cloudprovider.types import CloudProvider
from kube.errors import KubeError, ServerError
from kube.leases import LeaseClient
from workers.health import CHECK_TIMEOUT, Check, HealthServer

log = logging.getLogger(__name__)
CATALOG_RETRY_SECONDS = 30.0


class CatalogWarmer:
    """Loads the instance-type catalog once, retrying every CATALOG_RETRY_SECONDS until it succeeds;
    `loaded` is what the readiness probe reports."""

    def __init__(self, cloud: CloudProvider) -> None:
        self.cloud = cloud
        self.loaded = False

    async def run(self) -> None:
        while True:
            try:
                count = len(await asyncio.to_thread(self.cloud.instance_types, None))
            except Exception:
                log.exception("loading the instance type catalog failed; retrying in %gs", CATALOG_RETRY_SECONDS)
                await asyncio.sleep(CATALOG_RETRY_SECONDS)
                continue
            self.loaded = True
            log.info("instance type catalog loaded: %d types", count)
            return


def worker_probes(
    port: int, client: Client, worker: Worker, leases: LeaseClient, catalog: CatalogWarmer
) -> HealthServer | None:
    """The /healthz and /readyz server on `port` (None when it is 0). Liveness: the event loop
    answers and the Temporal worker runs. Readiness: Temporal answers its health check, the Kubernetes
    API answers (a read of the Lease; any answer but a server or connection error counts), and the
    instance-type catalog is loaded."""
    if not port:
        return None
    # One thread of its own for the Kubernetes read: a hung API server fails the check at its timeout
    # without tying up the loop's default executor, and probes do not pile up reads behind it.
    kube_reads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="probe")

    async def worker_running() -> str | None:
        return None if worker.is_running and not worker.is_shutdown else "the Temporal worker is not running"

    async def temporal() -> str | None:
        healthy = await client.service_client.check_health(timeout=timedelta(seconds=CHECK_TIMEOUT))
        return None if healthy else "the Temporal server reports itself unhealthy"

    async def kubernetes() -> str | None:
        try:
            await asyncio.get_running_loop().run_in_executor(kube_reads, leases.read)
        except ServerError as exc:
            return str(exc)
        except KubeError:
            pass  # it answered
        return None

    async def catalog_loaded() -> str | None:
        return None if catalog.loaded else "the instance-type catalog is not loaded yet"

    endpoints: dict[str, dict[str, Check]] = {
        "/healthz": {"temporal-worker": worker_running},
        "/readyz": {"temporal": temporal, "kubernetes": kubernetes, "catalog": catalog_loaded},
    }
    return HealthServer(endpoints, port)
