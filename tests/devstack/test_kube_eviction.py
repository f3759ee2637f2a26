"""pods/eviction with PodDisruptionBudgets, PDB status, and pods/binding."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.devstack.conftest import (
    AppsApi,
    CoreApi,
    PolicyApi,
    eventually_items,
    make_node,
    make_pod,
    unique,
)
from tests.eventually import eventually


def ready_pod(core: CoreApi, namespace: str, name: str, **labels: str) -> None:
    core.create_namespaced_pod(namespace, make_pod(name, namespace, **labels))
    core.patch_namespaced_pod_status(name, namespace, {"status": {
        "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})  # fmt: skip


def evict(core: CoreApi, namespace: str, name: str) -> None:
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    core.create_namespaced_pod_eviction(name, namespace, body)


@pytest.fixture
def namespace(core: CoreApi) -> str:
    name = unique("ns")
    core.create_namespace({"metadata": {"name": name}})
    return name


def budget(namespace: str, **spec: object) -> dict[str, Any]:
    selector = spec.pop("selector", {"matchLabels": {"app": "web"}})
    return {"metadata": {"name": "web", "namespace": namespace}, "spec": {"selector": selector, **spec}}


def test_eviction_deletes_a_pod_without_budget(core: CoreApi, namespace: str) -> None:
    ready_pod(core, namespace, "p1", app="web")
    evict(core, namespace, "p1")
    assert core.list_namespaced_pod(namespace).items == []


@pytest.mark.parametrize(
    "spec",
    [
        {"minAvailable": 2},
        {"maxUnavailable": 0},
        {"minAvailable": "100%"},
        {
            "maxUnavailable": "0%",
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
        },
    ],
)
def test_eviction_that_would_violate_the_budget_is_refused(
    core: CoreApi, policy: PolicyApi, namespace: str, spec: dict[str, object]
) -> None:
    ready_pod(core, namespace, "p1", app="web")
    ready_pod(core, namespace, "p2", app="web")
    policy.create_namespaced_pod_disruption_budget(namespace, budget(namespace, **spec))
    with pytest.raises(ApiException) as caught:
        evict(core, namespace, "p1")
    body = json.loads(caught.value.body or "{}")
    assert caught.value.status == 429 and body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert len(core.list_namespaced_pod(namespace).items) == 2


def test_eviction_spends_the_budget_one_pod_at_a_time(
    core: CoreApi, apps: AppsApi, policy: PolicyApi, namespace: str
) -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    apps.create_namespaced_replica_set(namespace, {"metadata": {"name": "web"}, "spec": {
        "replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template}})  # fmt: skip
    pods = eventually_items(lambda: core.list_namespaced_pod(namespace).items, 3)
    for pod in pods:
        core.patch_namespaced_pod_status(pod.metadata.name, namespace, {"status": {
            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})  # fmt: skip
    policy.create_namespaced_pod_disruption_budget(namespace, budget(namespace, maxUnavailable=1))
    evict(core, namespace, pods[0].metadata.name)
    with pytest.raises(ApiException) as caught:
        evict(core, namespace, pods[1].metadata.name)
    assert caught.value.status == 429


def test_pending_pods_are_evicted_regardless_of_the_budget(core: CoreApi, policy: PolicyApi, namespace: str) -> None:
    core.create_namespaced_pod(namespace, make_pod("pending", namespace, app="web"))
    policy.create_namespaced_pod_disruption_budget(namespace, budget(namespace, minAvailable=5))
    evict(core, namespace, "pending")
    assert core.list_namespaced_pod(namespace).items == []


def test_evicting_a_pod_with_finalizers_marks_it_deleting(core: CoreApi, namespace: str) -> None:
    pod = make_pod("p1", namespace)
    pod["metadata"]["finalizers"] = ["example.com/hold"]
    core.create_namespaced_pod(namespace, pod)
    evict(core, namespace, "p1")
    assert core.read_namespaced_pod("p1", namespace).metadata.deletion_timestamp


def test_budget_status_is_maintained(core: CoreApi, policy: PolicyApi, namespace: str) -> None:
    policy.create_namespaced_pod_disruption_budget(namespace, budget(namespace, minAvailable=1))
    ready_pod(core, namespace, "p1", app="web")
    ready_pod(core, namespace, "p2", app="web")

    def status() -> tuple[int, int, int, int]:
        s = policy.read_namespaced_pod_disruption_budget("web", namespace).status
        return (s.current_healthy, s.desired_healthy, s.disruptions_allowed, s.expected_pods)

    eventually(lambda: status() == (2, 1, 1, 2))


def test_binding_sets_node_name_and_pod_scheduled(core: CoreApi, namespace: str) -> None:
    core.create_node(make_node(node := unique("n")))
    core.create_namespaced_pod(namespace, make_pod("p1", namespace))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="p1"), target=client.V1ObjectReference(kind="Node", name=node)
    )
    core.create_namespaced_pod_binding("p1", namespace, binding, _preload_content=False)
    pod = core.read_namespaced_pod("p1", namespace)
    assert pod.spec.node_name == node
    assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod_binding("p1", namespace, binding, _preload_content=False)
    assert caught.value.status == 409
