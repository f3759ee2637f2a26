"""Kubernetes API faults injected over HTTP (``/_nodeflow/faults``): refused requests change no state."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException

from devstack.kube import catalog
from devstack.kube.faults import FAULTS_PATH, KubeFaultClient
from devstack.kube.server import KubeApiServer
from tests.devstack.conftest import CoreApi, CustomApi, make_node, make_nodeclaim, unique
from tests.eventually import eventually

NODECLAIMS = ("karpenter.sh", "v1", "nodeclaims")


@pytest.fixture
def faults(api_server: KubeApiServer) -> Any:
    client = KubeFaultClient(api_server.url)
    client.clear()
    yield client
    client.clear()


def status_of(call: Any) -> tuple[int, str]:
    with pytest.raises(ApiException) as info:
        call()
    return info.value.status, json.loads(info.value.body or "{}")["reason"]


def test_a_refused_create_stores_nothing_and_the_rule_runs_out(faults: KubeFaultClient, core: CoreApi) -> None:
    name = unique("n")
    faults.fail("POST", "^/api/v1/nodes$", 503, count=2)

    assert status_of(lambda: core.create_node(make_node(name))) == (503, "ServiceUnavailable")
    assert status_of(lambda: core.create_node(make_node(name))) == (503, "ServiceUnavailable")
    assert status_of(lambda: core.read_node(name)) == (404, "NotFound")  # reads are not matched
    assert faults.get() == []

    core.create_node(make_node(name))  # the third attempt is served
    assert core.read_node(name).metadata.name == name


def test_a_refused_status_patch_changes_neither_status_nor_resource_version(
    faults: KubeFaultClient, custom: CustomApi
) -> None:
    name = unique("nc")
    custom.create_cluster_custom_object(*NODECLAIMS, make_nodeclaim(name))
    before = custom.get_cluster_custom_object(*NODECLAIMS, name)
    faults.fail("PATCH", f"/nodeclaims/{name}/status$", 409, count=1)

    patch = {"status": {"providerID": "aws:///us-west-2a/i-1"}}
    assert status_of(lambda: custom.patch_cluster_custom_object_status(*NODECLAIMS, name, patch)) == (409, "Conflict")
    after = custom.get_cluster_custom_object(*NODECLAIMS, name)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "providerID" not in (after.get("status") or {})

    custom.patch_cluster_custom_object_status(*NODECLAIMS, name, patch)
    assert custom.get_cluster_custom_object(*NODECLAIMS, name)["status"]["providerID"] == "aws:///us-west-2a/i-1"


def test_a_rule_with_count_minus_one_holds_until_cleared(faults: KubeFaultClient, core: CoreApi) -> None:
    name = unique("n")
    core.create_node(make_node(name))
    faults.fail("*", f"^/api/v1/nodes/{name}$", 429, count=-1)
    for _ in range(3):
        assert status_of(lambda: core.patch_node(name, {"metadata": {"labels": {"a": "b"}}})) == (
            429,
            "TooManyRequests",
        )
    assert faults.get() == [{"method": "*", "path": f"^/api/v1/nodes/{name}$", "status": 429, "count": -1}]
    faults.clear()
    core.patch_node(name, {"metadata": {"labels": {"a": "b"}}})
    assert core.read_node(name).metadata.labels == {"a": "b"}


def test_rules_match_the_method_and_are_consumed_in_order(faults: KubeFaultClient, core: CoreApi) -> None:
    name = unique("n")
    core.create_node(make_node(name))
    faults.fail("DELETE", "/api/v1/nodes/", 500, count=1)
    faults.fail("*", "/api/v1/nodes/", 503, count=1)

    assert status_of(lambda: core.delete_node(name)) == (500, "InternalError")
    assert status_of(lambda: core.read_node(name)) == (503, "ServiceUnavailable")
    assert core.read_node(name).metadata.name == name  # still there: the refused delete did nothing


def test_drop_watches_ends_live_streams(faults: KubeFaultClient, api_server: KubeApiServer, core: CoreApi) -> None:
    ended = threading.Event()

    def consume() -> None:
        for _ in watch.Watch().stream(core.list_namespaced_pod, "default", label_selector="none=here",
                                      timeout_seconds=30):  # fmt: skip
            pass
        ended.set()

    threading.Thread(target=consume, daemon=True).start()
    eventually(lambda: api_server.call(lambda: api_server.emulator.store.watch_count(catalog.POD)) > 0)
    assert faults.drop_watches() >= 1
    assert ended.wait(5), "the client's watch stream did not end"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rules": [{"path": "/x", "status": 200}]}, "rules[0].status"),
        ({"rules": [{"path": "(", "status": 500}]}, "rules[0].path"),
        ({"rules": [{"method": "BREW", "path": "/x", "status": 500}]}, "rules[0].method"),
        ({"rules": [{"path": "/x", "status": 500, "count": 0}]}, "rules[0].count"),
        ({"rules": [{"path": "/x", "status": 500, "when": 1}]}, "unknown fields"),
        ({"drop_watches": "yes"}, "drop_watches"),
        ({"rule": []}, "unknown fault fields"),
    ],
)
def test_bad_requests_are_refused_naming_the_field(api_server: KubeApiServer, body: Any, field: str) -> None:
    response = httpx.post(api_server.url + FAULTS_PATH, json=body)
    assert response.status_code == 400
    assert field in response.json()["message"]
    assert httpx.get(api_server.url + FAULTS_PATH).json() == {"rules": []}
