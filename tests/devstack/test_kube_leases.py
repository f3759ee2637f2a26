"""The emulator serves coordination.k8s.io/v1 Leases with optimistic concurrency, as leader election
needs: a write naming a stale resourceVersion is 409 Conflict, a second create 409 AlreadyExists."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from devstack.kube.server import KubeApiServer
from kube.client import KubeClient
from kube.errors import AlreadyExistsError, ConflictError
from kube.leases import LeaseClient, LeaseRecord
from kube.resources import LEASE
from tests.devstack.conftest import unique

NOW = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture
def kube(api_server: KubeApiServer) -> Iterator[KubeClient]:
    client = KubeClient.for_url(api_server.url)
    yield client
    client.close()


def test_a_lease_round_trips_its_record_with_microsecond_times(kube: KubeClient) -> None:
    leases = LeaseClient(kube, "kube-system", unique("lease"))
    assert leases.read() is None
    record = LeaseRecord("pod-a_1234", 15, NOW, NOW, 3)
    created = leases.create(record)
    assert created.record == record and created.resource_version
    stored = kube.get(LEASE, leases.name, "kube-system")
    assert stored["spec"]["renewTime"] == "2026-01-01T12:00:00.123456Z"
    read = leases.read()
    assert read is not None and read.record == record


def test_a_write_with_a_stale_resource_version_conflicts(kube: KubeClient) -> None:
    leases = LeaseClient(kube, "default", unique("lease"))
    first = leases.create(LeaseRecord("a", 15, NOW, NOW))
    renewed = NOW.replace(second=2)
    second = leases.update(LeaseRecord("a", 15, NOW, renewed, 0), first.resource_version)
    assert int(second.resource_version) > int(first.resource_version)
    with pytest.raises(ConflictError):
        leases.update(LeaseRecord("b", 15, NOW, NOW, 1), first.resource_version)
    with pytest.raises(AlreadyExistsError):
        leases.create(LeaseRecord("b", 15, NOW, NOW))
    read = leases.read()
    assert read is not None and read.record.holder == "a"


def test_leases_are_listed_per_namespace(kube: KubeClient) -> None:
    name = unique("lease")
    LeaseClient(kube, "kube-node-lease", name).create(LeaseRecord("node", 40))
    assert name in [o["metadata"]["name"] for o in kube.list(LEASE, namespace="kube-node-lease")]
    assert name not in [o["metadata"]["name"] for o in kube.list(LEASE, namespace="default")]
