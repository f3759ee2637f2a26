"""Fixtures for the Kubernetes emulator tests: a server on a free port and official-client APIs."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias, TypeVar

import pytest
from kubernetes import client

from devstack.kube.server import KubeApiServer
from tests.eventually import eventually

T = TypeVar("T")

# The official client accepts plain dict bodies and returns loosely shaped models, which its type
# annotations do not admit; tests hold its APIs as these aliases.
CoreApi: TypeAlias = Any
AppsApi: TypeAlias = Any
PolicyApi: TypeAlias = Any
CustomApi: TypeAlias = Any


@pytest.fixture(scope="module")
def api_server() -> Iterator[KubeApiServer]:
    """One emulator per test module (tests use unique names); controllers on."""
    with KubeApiServer() as server:
        yield server


@pytest.fixture(scope="module")
def api_client(api_server: KubeApiServer) -> Iterator[client.ApiClient]:
    cfg = client.Configuration()
    cfg.host = api_server.url
    with client.ApiClient(cfg) as api:
        yield api


@pytest.fixture
def core(api_client: client.ApiClient) -> CoreApi:
    return client.CoreV1Api(api_client)


@pytest.fixture
def apps(api_client: client.ApiClient) -> AppsApi:
    return client.AppsV1Api(api_client)


@pytest.fixture
def policy(api_client: client.ApiClient) -> PolicyApi:
    return client.PolicyV1Api(api_client)


@pytest.fixture
def custom(api_client: client.ApiClient) -> CustomApi:
    return client.CustomObjectsApi(api_client)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def eventually_items(fetch: Callable[[], list[T]], count: int, timeout: float = 10.0) -> list[T]:
    """Poll ``fetch`` until it returns exactly ``count`` items, and return them."""

    def check() -> tuple[list[T]]:
        items = fetch()
        assert len(items) == count, f"{len(items)} items, not {count}: {items!r}"
        return (items,)

    return eventually(check, timeout=timeout, what=f"{count} items")[0]


def make_node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {}}


def make_pod(name: str, namespace: str = "default", node: str | None = None, **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def make_nodeclaim(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [],
        },
    }


def raw_request(
    url: str, method: str, path: str, body: object = None, content_type: str = "application/json"
) -> tuple[int, dict[str, Any]]:
    """One HTTP request outside the official client (for content types and bodies it never sends)."""
    import httpx

    content = None if body is None else json.dumps(body).encode()
    response = httpx.request(method, url + path, content=content, headers={"Content-Type": content_type})
    return response.status_code, response.json()
