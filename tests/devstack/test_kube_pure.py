"""Pure pieces of the emulator: routing, bookkeeping, tables, the store without HTTP."""

from __future__ import annotations

import datetime

import pytest

from devstack.kube import bookkeeping, catalog, routing, tables
from devstack.kube.errors import ApiError
from devstack.kube.store import ObjectStore
from tests.devstack.conftest import make_node, make_pod


@pytest.mark.parametrize(
    ("path", "plural", "namespace", "name", "sub"),
    [("/api/v1/namespaces", "namespaces", None, None, None),
     ("/api/v1/namespaces/default", "namespaces", None, "default", None),
     ("/api/v1/namespaces/default/pods", "pods", "default", None, None),
     ("/api/v1/namespaces/default/pods/p/eviction", "pods", "default", "p", "eviction"),
     ("/apis/karpenter.sh/v1/nodeclaims/c/status", "nodeclaims", None, "c", "status"),
     ("/apis/apps/v1/namespaces/ns/deployments/d/scale", "deployments", "ns", "d", "scale")],
)  # fmt: skip
def test_routing_resolves_resource_paths(
    path: str, plural: str, namespace: str | None, name: str | None, sub: str | None
) -> None:
    target = routing.parse(path)
    assert target.resource is not None
    assert (target.resource.plural, target.namespace, target.name, target.subresource) == (plural, namespace, name, sub)


def test_routing_refuses_unknown_resources_and_subresources() -> None:
    for path in ("/api/v1/widgets", "/api/v1/nodes/n/eviction", "/api/v1/namespaces/ns/nodes"):
        with pytest.raises(ApiError):
            routing.parse(path)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400, "3d"),
    ],
)
def test_ages_read_like_kubectl(seconds: int, text: str) -> None:
    assert tables.human_duration(seconds) == text


def test_update_keeps_server_metadata_and_bumps_generation_on_spec_only() -> None:
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    old = bookkeeping.prepare_create(catalog.NODE, make_node("n"), None, now, 1)
    forged = {**old, "metadata": {**old["metadata"], "uid": "forged", "labels": {"a": "b"}}}
    relabelled = bookkeeping.prepare_update(catalog.NODE, old, forged, None, 2)
    assert relabelled["metadata"]["uid"] == old["metadata"]["uid"] and relabelled["metadata"]["generation"] == 1
    cordoned = bookkeeping.prepare_update(catalog.NODE, old, {**old, "spec": {"unschedulable": True}}, None, 3)
    assert cordoned["metadata"]["generation"] == 2 and cordoned["metadata"]["resourceVersion"] == "3"


def test_store_notifies_listeners_in_write_order() -> None:
    store = ObjectStore()
    seen: list[tuple[str, str]] = []
    store.add_listener(lambda res, event: seen.append((event.type, event.obj["metadata"]["name"])))
    store.create(catalog.NAMESPACE, None, {"metadata": {"name": "default"}})
    store.create(catalog.POD, "default", make_pod("p"))
    store.delete(catalog.POD, "default", "p")
    assert seen == [("ADDED", "default"), ("ADDED", "p"), ("DELETED", "p")]
    assert store.resource_version == 3
