"""KubeClient against the emulated API server over real HTTP: CRUD, patches, selectors, errors, watch."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import kmock
import pytest
import yaml
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from devstack.kube.server import KubeApiServer
from kube import client as client_module
from kube.client import GoneError, KubeClient
from kube.config import KubeConfigError, api_client_for_url
from kube.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
)
from kube.resources import NAMESPACE, NODE, NODECLAIM, PDB, POD
from kube.types import Obj
from workers.tracing import Tracing


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}}


def make_pod(name: str, namespace: str = "default", node: str = "", **labels: str) -> Obj:
    spec: Obj = {"containers": [{"name": "app", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": spec}


def inject(server: KubeApiServer, route: str, status: int, times: int = 1) -> None:
    """The next `times` requests matching `route` (kmock DSL, e.g. "get /api/v1/nodes") get `status`."""

    def add() -> None:
        view = server.emulator[route]
        seen = len(view)  # reactions slice the request log: count from the next request on
        view[seen : seen + times] << status

    server.call(add)


class TestCrud:
    def test_create_returns_the_stored_object_and_get_reads_it_back(self, kube: KubeClient) -> None:
        name = unique("n")
        created = kube.create(NODE, make_node(name, role="a"))
        assert created["metadata"]["name"] == name
        assert created["metadata"]["uid"]
        assert kube.get(NODE, name)["metadata"]["labels"] == {"role": "a"}

    def test_create_of_a_taken_name_raises_already_exists(self, kube: KubeClient) -> None:
        name = unique("n")
        kube.create(NODE, make_node(name))
        with pytest.raises(AlreadyExistsError):
            kube.create(NODE, make_node(name))

    def test_get_and_delete_of_a_missing_object_raise_not_found(self, kube: KubeClient) -> None:
        with pytest.raises(NotFoundError):
            kube.get(NODE, unique("missing"))
        with pytest.raises(NotFoundError):
            kube.delete(NODE, unique("missing"))

    def test_create_takes_the_namespace_from_the_object(self, kube: KubeClient) -> None:
        name = unique("p")
        kube.create(POD, make_pod(name, namespace="kube-system"))
        assert kube.get(POD, name, "kube-system")["metadata"]["namespace"] == "kube-system"

    def test_cluster_scoped_custom_resources_round_trip(self, kube: KubeClient) -> None:
        name = unique("claim")
        body = {"metadata": {"name": name}, "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass", "name": "default"}, "requirements": []}}  # fmt: skip
        created = kube.create(NODECLAIM, body)
        assert created["apiVersion"] == "karpenter.sh/v1"
        assert created["kind"] == "NodeClaim"
        kube.delete(NODECLAIM, name)
        with pytest.raises(NotFoundError):
            kube.get(NODECLAIM, name)

    def test_delete_with_finalizers_marks_deletion_and_keeps_the_object(self, kube: KubeClient) -> None:
        name = unique("n")
        kube.create(NODE, {"metadata": {"name": name, "finalizers": ["example.com/hold"]}})
        kube.delete(NODE, name)
        assert kube.get(NODE, name)["metadata"]["deletionTimestamp"]
        kube.patch(NODE, name, {"metadata": {"finalizers": None}})
        with pytest.raises(NotFoundError):
            kube.get(NODE, name)

    def test_delete_with_a_grace_period_sends_it_in_the_delete_options(self, kube: KubeClient) -> None:
        name = unique("p")
        kube.create(POD, {**make_pod(name), "metadata": {**make_pod(name)["metadata"], "finalizers": ["x.io/hold"]}})
        kube.delete(POD, name, "default", grace_period_seconds=7)
        assert kube.get(POD, name, "default")["metadata"]["deletionGracePeriodSeconds"] == 7
        kube.patch(POD, name, {"metadata": {"finalizers": None}}, namespace="default")


class TestList:
    def test_list_is_sorted_by_namespace_then_name_with_type_meta(self, kube: KubeClient) -> None:
        label = unique("batch")
        for namespace, name in (("kube-system", "b"), ("default", "c"), ("default", "a")):
            kube.create(POD, make_pod(f"{label}-{name}", namespace=namespace, batch=label))
        pods = kube.list(POD, label_selector=f"batch={label}")
        keys = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods]
        assert keys == [("default", f"{label}-a"), ("default", f"{label}-c"), ("kube-system", f"{label}-b")]
        assert {(p["kind"], p["apiVersion"]) for p in pods} == {("Pod", "v1")}

    def test_list_in_one_namespace(self, kube: KubeClient) -> None:
        label = unique("ns")
        kube.create(POD, make_pod(f"{label}-1", namespace="default", batch=label))
        kube.create(POD, make_pod(f"{label}-2", namespace="kube-system", batch=label))
        pods = kube.list(POD, namespace="kube-system", label_selector=f"batch={label}")
        assert [p["metadata"]["name"] for p in pods] == [f"{label}-2"]

    def test_field_selector(self, kube: KubeClient) -> None:
        node = unique("node")
        kube.create(POD, make_pod(unique("on"), node=node))
        kube.create(POD, make_pod(unique("off")))
        pods = kube.list(POD, field_selector=f"spec.nodeName={node}")
        assert [p["spec"]["nodeName"] for p in pods] == [node]

    def test_list_follows_continue_tokens(self, kube: KubeClient, monkeypatch: pytest.MonkeyPatch) -> None:
        label = unique("page")
        for index in range(5):
            kube.create(NODE, make_node(f"{label}-{index}", page=label))
        monkeypatch.setattr(client_module, "LIST_PAGE_SIZE", 2)
        names = [n["metadata"]["name"] for n in kube.list(NODE, label_selector=f"page={label}")]
        assert names == [f"{label}-{index}" for index in range(5)]


class TestWrites:
    def test_merge_patch_replaces_lists_and_null_deletes(self, kube: KubeClient) -> None:
        name = unique("n")
        kube.create(NODE, {"metadata": {"name": name, "labels": {"a": "1", "b": "2"}},
                           "spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]}})  # fmt: skip
        patched = kube.patch(NODE, name, {"metadata": {"labels": {"a": None}},
                                          "spec": {"taints": [{"key": "y", "effect": "NoSchedule"}]}})  # fmt: skip
        assert patched["metadata"]["labels"] == {"b": "2"}
        assert [t["key"] for t in patched["spec"]["taints"]] == ["y"]

    def test_strategic_patch_merges_lists_that_have_a_merge_strategy(self, kube: KubeClient) -> None:
        name = unique("n")
        kube.create(NODE, {"metadata": {"name": name, "finalizers": ["example.com/a"]}})
        patch = {"metadata": {"finalizers": ["example.com/b"]}}
        patched = kube.patch(NODE, name, patch, patch_type="strategic")
        assert patched["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
        kube.patch(NODE, name, {"metadata": {"finalizers": None}})

    def test_json_patch_applies_and_a_failed_test_is_a_conflict(self, kube: KubeClient) -> None:
        name = unique("n")
        kube.create(NODE, make_node(name, a="1"))
        patched = kube.patch(NODE, name, [{"op": "add", "path": "/metadata/labels/b", "value": "2"}], patch_type="json")
        assert patched["metadata"]["labels"] == {"a": "1", "b": "2"}
        with pytest.raises(ConflictError):
            kube.patch(NODE, name, [{"op": "test", "path": "/metadata/labels/a", "value": "9"}], patch_type="json")

    def test_a_stale_resource_version_in_a_patch_is_a_conflict(self, kube: KubeClient) -> None:
        name = unique("n")
        stale = kube.create(NODE, make_node(name))["metadata"]["resourceVersion"]
        kube.patch(NODE, name, {"metadata": {"labels": {"x": "1"}}})
        with pytest.raises(ConflictError):
            kube.patch(NODE, name, {"metadata": {"resourceVersion": stale, "labels": {"x": "2"}}})

    def test_replace_needs_the_current_resource_version(self, kube: KubeClient) -> None:
        name = unique("n")
        node = kube.create(NODE, make_node(name))
        node["spec"] = {"unschedulable": True}
        replaced = kube.replace(NODE, node)
        assert replaced["spec"]["unschedulable"] is True
        with pytest.raises(ConflictError):
            kube.replace(NODE, node)  # still carries the old resourceVersion

    def test_status_subresource_patch_writes_only_status(self, kube: KubeClient) -> None:
        name = unique("n")
        kube.create(NODE, make_node(name))
        patch = {"spec": {"unschedulable": True}, "status": {"capacity": {"cpu": "2"}}}
        patched = kube.patch(NODE, name, patch, subresource="status")
        assert patched["status"]["capacity"] == {"cpu": "2"}
        assert not patched.get("spec", {}).get("unschedulable")

    def test_bad_patch_arguments_fail_before_any_request(self, kube: KubeClient) -> None:
        with pytest.raises(ValueError, match="list of RFC 6902"):
            kube.patch(NODE, "n", {"a": 1}, patch_type="json")
        with pytest.raises(ValueError, match="needs an object"):
            kube.patch(NODE, "n", [{"op": "remove", "path": "/a"}])
        with pytest.raises(ValueError, match=r"metadata\.name"):
            kube.replace(NODE, {"metadata": {}})

    def test_strategic_patch_of_a_custom_resource_is_invalid(self, kube: KubeClient) -> None:
        name = unique("claim")
        kube.create(NODECLAIM, {"metadata": {"name": name}, "spec": {}})
        with pytest.raises(InvalidError):
            kube.patch(NODECLAIM, name, {"metadata": {"labels": {"a": "b"}}}, patch_type="strategic")


class TestEviction:
    def test_evict_deletes_the_pod(self, kube: KubeClient) -> None:
        name = unique("p")
        kube.create(POD, make_pod(name))
        kube.evict("default", name)
        with pytest.raises(NotFoundError):
            kube.get(POD, name, "default")

    def test_evict_of_a_missing_pod_is_not_found(self, kube: KubeClient) -> None:
        with pytest.raises(NotFoundError):
            kube.evict("default", unique("gone"))

    def test_a_disruption_budget_refusal_is_too_many_requests(self, kube: KubeClient) -> None:
        app = unique("app")
        kube.create(PDB, {"metadata": {"name": app, "namespace": "default"},
                          "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}})  # fmt: skip
        name = unique("p")
        kube.create(POD, make_pod(name, app=app))
        kube.patch(POD, name, {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                   "default", subresource="status")  # fmt: skip
        with pytest.raises(TooManyRequestsError):
            kube.evict("default", name)


class TestErrors:
    @pytest.mark.parametrize(
        ("status", "error"),
        [(503, ServerError), (500, ServerError), (429, TooManyRequestsError), (403, ForbiddenError),
         (401, ForbiddenError), (422, InvalidError), (400, InvalidError), (404, NotFoundError)],
    )  # fmt: skip
    def test_http_statuses_become_the_error_tree(
        self, kube: KubeClient, api_server: KubeApiServer, status: int, error: type[Exception]
    ) -> None:
        name = unique("n")
        inject(api_server, f"get /api/v1/nodes/{name}", status)
        with pytest.raises(error):
            kube.get(NODE, name)

    def test_an_unreachable_server_is_a_retryable_server_error(self) -> None:
        dead = KubeClient(api_client_for_url("http://127.0.0.1:1"), connect_timeout=1.0)
        with pytest.raises(ServerError) as caught:
            dead.get(NODE, "n")
        assert caught.value.retryable

    @pytest.mark.parametrize(
        ("status", "body", "error"),
        [(409, {"reason": "AlreadyExists"}, AlreadyExistsError), (409, {"reason": "Conflict"}, ConflictError),
         (409, None, ConflictError), (410, {"reason": "Expired"}, GoneError), (415, None, InvalidError),
         (504, None, ServerError), (0, None, ServerError)],
    )  # fmt: skip
    def test_status_translation_table(self, status: int, body: object, error: type[Exception]) -> None:
        assert type(client_module.error_for_status(status, body, "GET /x")) is error


class TestWatch:
    def test_watch_streams_changes_and_ends_after_its_timeout(self, kube: KubeClient) -> None:
        label = unique("w")
        start = kube.create(NODE, make_node(f"{label}-0", w=label))["metadata"]["resourceVersion"]
        events: list[tuple[str, str]] = []

        def consume() -> None:
            stream = kube.watch(NODE, label_selector=f"w={label}", resource_version=start, timeout_seconds=1)
            events.extend((kind, obj["metadata"].get("name", "")) for kind, obj in stream if kind != "BOOKMARK")

        reader = threading.Thread(target=consume)
        reader.start()
        kube.create(NODE, make_node(f"{label}-1", w=label))
        kube.patch(NODE, f"{label}-1", {"spec": {"unschedulable": True}})
        kube.delete(NODE, f"{label}-1")
        reader.join(10)
        assert not reader.is_alive(), "the watch did not end after its timeoutSeconds"
        assert events == [("ADDED", f"{label}-1"), ("MODIFIED", f"{label}-1"), ("DELETED", f"{label}-1")]

    def test_watch_without_resource_version_starts_with_the_current_objects(self, kube: KubeClient) -> None:
        label = unique("w")
        kube.create(NODE, make_node(f"{label}-0", w=label))
        stream = kube.watch(NODE, label_selector=f"w={label}", timeout_seconds=1)
        kind, obj = next(stream)
        stream.close()
        assert (kind, obj["metadata"]["name"], obj["kind"]) == ("ADDED", f"{label}-0", "Node")

    def test_a_watch_needs_a_positive_timeout(self, kube: KubeClient) -> None:
        with pytest.raises(ValueError, match="timeout_seconds"):
            next(kube.watch(NODE, timeout_seconds=0))

    def test_a_dropped_connection_ends_the_watch(self, kube: KubeClient, api_server: KubeApiServer) -> None:
        stream = kube.watch(NAMESPACE, timeout_seconds=30)
        assert next(stream)[0] == "ADDED"  # the watch is established
        api_server.call(api_server.emulator.drop_watches)
        assert all(kind in ("ADDED", "BOOKMARK") for kind, _ in stream)  # ends without error

    def test_a_refused_watch_raises_gone(self, kube: KubeClient, api_server: KubeApiServer) -> None:
        def add() -> None:
            watches = api_server.emulator[kmock.action.WATCH, kmock.resource("v1/namespaces")]
            seen = len(watches)
            watches[seen : seen + 1] << 410

        api_server.call(add)
        with pytest.raises(GoneError):
            list(kube.watch(NAMESPACE, resource_version="1", timeout_seconds=1))


class TestConstruction:
    def test_from_kubeconfig(self, api_server: KubeApiServer, tmp_path: Path) -> None:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "dev",
            "clusters": [{"name": "dev", "cluster": {"server": api_server.url}}],
            "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "dev"}}],
            "users": [{"name": "dev", "user": {"token": "t"}}],
        }))  # fmt: skip
        client = KubeClient.from_kubeconfig(str(path), context="dev")
        assert any(n["metadata"]["name"] == "default" for n in client.list(NAMESPACE))

    def test_a_missing_kubeconfig_names_the_file(self, tmp_path: Path) -> None:
        with pytest.raises(KubeConfigError, match="nope"):
            KubeClient.from_kubeconfig(str(tmp_path / "nope"))

    def test_a_bad_url_is_refused(self) -> None:
        with pytest.raises(KubeConfigError, match="http"):
            KubeClient.for_url("127.0.0.1:6443")

    def test_in_cluster_outside_a_pod_says_so(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        with pytest.raises(KubeConfigError, match="not running in a Kubernetes pod"):
            KubeClient.in_cluster()

    def test_one_client_serves_many_threads(self, kube: KubeClient) -> None:
        label = unique("t")
        errors: list[BaseException] = []

        def work(index: int) -> None:
            try:
                kube.create(NODE, make_node(f"{label}-{index}", t=label))
                kube.get(NODE, f"{label}-{index}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert not errors
        assert len(kube.list(NODE, label_selector=f"t={label}")) == 16


def test_traced_calls_are_client_spans_naming_the_resource_never_the_body(kube: KubeClient) -> None:
    """workers.tracing.TracedKube on the client: within a trace, a span per call with the verb, resource,
    namespace and name, an error type on failure, and nothing of the object sent; outside any, none."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider)
    traced = tracing.kube(kube)
    name = unique("traced")
    traced.create(NODE, {"metadata": {"name": name, "labels": {"secret-ish": "label-value-qz7"}}})  # no trace
    assert exporter.get_finished_spans() == ()
    with tracing.tracer.start_as_current_span("RunActivity:launch"):
        traced.patch(NODE, name, {"metadata": {"annotations": {"a": "annotation-value-qz7"}}})
        assert traced.get(NODE, name)["metadata"]["name"] == name
        assert any(n["metadata"]["name"] == name for n in traced.list(NODE))
        traced.delete(NODE, name)
        with pytest.raises(NotFoundError):
            traced.get(NODE, name)
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [
        "kube.patch Node", "kube.get Node", "kube.list Node", "kube.delete Node", "kube.get Node", "RunActivity:launch",
    ]  # fmt: skip
    assert dict(spans[0].attributes or {}) == {
        "k8s.verb": "patch", "k8s.resource": "nodes", "k8s.api_version": "v1", "k8s.object.name": name,
    }  # fmt: skip
    assert dict(spans[4].attributes or {})["error.type"] == "NotFoundError"
    assert spans[4].status.status_code == StatusCode.ERROR
    assert {s.context.trace_id for s in spans} == {spans[-1].context.trace_id}
    assert "qz7" not in "".join(s.to_json() for s in spans)  # not hex: no trace or span id holds it
