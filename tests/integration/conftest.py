"""Fixtures of the integration tests: one emulated Kubernetes API server per module, and a `KubeClient` on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack.kube.server import KubeApiServer
from kube.client import KubeClient


@pytest.fixture(scope="module")
def api_server() -> Iterator[KubeApiServer]:
    server = KubeApiServer(controllers=False)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kube(api_server: KubeApiServer) -> Iterator[KubeClient]:
    client = KubeClient.for_url(api_server.url)
    yield client
    client.close()
