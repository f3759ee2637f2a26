"""Watch: resourceVersion, timeoutSeconds, 410 Gone, selector transitions, dropped streams."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from devstack.kube import catalog
from devstack.kube.server import KubeApiServer
from devstack.kube.store import ObjectStore
from tests.devstack.conftest import CoreApi, make_node, make_pod, unique
from tests.eventually import eventually


def take(count: int, list_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
    """The first ``count`` events of a watch (type, name); the stream is closed as soon as they arrive."""
    stream, seen = watch.Watch(), []
    for event in stream.stream(list_fn, *args, timeout_seconds=5, **kwargs):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == count:
            stream.stop()
    return seen


def watching(api_server: KubeApiServer) -> bool:
    return api_server.call(lambda: api_server.emulator.store.watch_count(catalog.POD)) > 0


def test_watch_from_a_resource_version_sends_only_newer_events(core: CoreApi) -> None:
    run = unique("w")
    core.create_node(make_node(f"{run}-old", run=run))
    since = core.list_node(label_selector=f"run={run}").metadata.resource_version
    core.create_node(make_node(f"{run}-new", run=run))
    core.patch_node(f"{run}-new", {"spec": {"unschedulable": True}})
    core.delete_node(f"{run}-new")
    events = take(3, core.list_node, label_selector=f"run={run}", resource_version=since)
    assert events == [("ADDED", f"{run}-new"), ("MODIFIED", f"{run}-new"), ("DELETED", f"{run}-new")]


def test_watch_without_resource_version_starts_with_synthetic_added(core: CoreApi) -> None:
    run = unique("w")
    core.create_node(make_node(f"{run}-a", run=run))
    assert take(1, core.list_node, label_selector=f"run={run}") == [("ADDED", f"{run}-a")]


def test_server_ends_the_stream_after_timeout_seconds(core: CoreApi) -> None:
    started = time.monotonic()
    list(watch.Watch().stream(core.list_namespaced_pod, "default", label_selector="none=here", timeout_seconds=1))
    assert 0.9 <= time.monotonic() - started < 3


def test_a_timed_out_watch_with_bookmarks_ends_with_a_bookmark(api_server: KubeApiServer) -> None:
    import httpx

    path = "/api/v1/namespaces/kube-public/pods?watch=true&timeoutSeconds=1&allowWatchBookmarks=true"
    lines = httpx.get(api_server.url + path, timeout=5).text.splitlines()
    last = json.loads(lines[-1])
    assert last["type"] == "BOOKMARK" and int(last["object"]["metadata"]["resourceVersion"]) > 0


def test_a_client_closing_its_watch_releases_the_subscription(api_server: KubeApiServer) -> None:
    import httpx

    before = api_server.call(lambda: api_server.emulator.store.watch_count(catalog.NODE))
    with httpx.stream("GET", api_server.url + "/api/v1/nodes?watch=true&timeoutSeconds=60", timeout=5) as response:
        assert response.status_code == 200
        eventually(lambda: api_server.call(lambda: api_server.emulator.store.watch_count(catalog.NODE)) > before)
    eventually(lambda: api_server.call(lambda: api_server.emulator.store.watch_count(catalog.NODE)) == before)


def test_live_events_arrive_while_watching(api_server: KubeApiServer, core: CoreApi) -> None:
    run = unique("w")
    seen: list[tuple[str, str]] = []

    def consume() -> None:
        seen.extend(take(2, core.list_namespaced_pod, "kube-system", label_selector=f"run={run}"))

    reader = threading.Thread(target=consume)
    reader.start()
    eventually(lambda: watching(api_server))
    core.create_namespaced_pod("kube-system", make_pod(f"{run}-1", "kube-system", run=run))
    core.delete_namespaced_pod(f"{run}-1", "kube-system")
    reader.join(5)
    assert seen == [("ADDED", f"{run}-1"), ("DELETED", f"{run}-1")]


def test_objects_leaving_a_field_selection_are_sent_as_deleted(core: CoreApi) -> None:
    run = unique("w")
    core.create_namespaced_pod("default", make_pod(f"{run}-p", run=run))
    since = core.read_namespaced_pod(f"{run}-p", "default").metadata.resource_version
    core.create_namespaced_pod_binding(
        f"{run}-p",
        "default",
        client.V1Binding(
            metadata=client.V1ObjectMeta(name=f"{run}-p"), target=client.V1ObjectReference(kind="Node", name="n1")
        ),
        _preload_content=False,
    )
    events = take(
        1,
        core.list_namespaced_pod,
        "default",
        resource_version=since,
        label_selector=f"run={run}",
        field_selector="spec.nodeName=",
    )
    assert events == [("DELETED", f"{run}-p")]


def test_a_compacted_resource_version_is_gone() -> None:
    store = ObjectStore(history_limit=2)
    for i in range(4):
        store.create(catalog.NODE, None, make_node(f"n{i}"))
    with pytest.raises(Exception, match="too old resource version") as caught:
        store.subscribe(catalog.NODE, 1)
    assert caught.value.code == 410  # type: ignore[attr-defined]


def test_gone_over_http_is_an_error_event() -> None:
    with KubeApiServer(controllers=False, watch_history=2) as server:
        cfg = client.Configuration()
        cfg.host = server.url
        with client.ApiClient(cfg) as api:
            core: CoreApi = client.CoreV1Api(api)
            since = core.list_persistent_volume().metadata.resource_version
            for i in range(3):
                core.create_persistent_volume({"metadata": {"name": f"pv{i}"}})
            with pytest.raises(ApiException) as caught:
                list(watch.Watch().stream(core.list_persistent_volume, resource_version=since, timeout_seconds=1))
    assert caught.value.status == 410


def test_dropped_watches_end_the_client_stream(api_server: KubeApiServer, core: CoreApi) -> None:
    done = threading.Event()

    def consume() -> None:
        list(watch.Watch().stream(core.list_namespaced_pod, "kube-public", timeout_seconds=30))
        done.set()

    threading.Thread(target=consume, daemon=True).start()
    eventually(lambda: watching(api_server))
    assert api_server.call(lambda: api_server.emulator.drop_watches(catalog.POD)) >= 1
    assert done.wait(5)
