"""In-process controllers: Deployment -> ReplicaSet -> Pods, garbage collection, pod GC."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from devstack.kube.server import KubeApiServer
from tests.devstack.conftest import AppsApi, CoreApi, eventually_items, make_node, unique
from tests.eventually import eventually


@pytest.fixture
def namespace(core: CoreApi) -> str:
    name = unique("ns")
    core.create_namespace({"metadata": {"name": name}})
    return name


def deployment(name: str, replicas: int, image: str = "nginx") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def pods_of(core: CoreApi, namespace: str, app: str) -> list[Any]:
    return core.list_namespaced_pod(namespace, label_selector=f"app={app}").items


def test_a_deployment_gets_a_replicaset_and_pods(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 3))
    pods = eventually_items(lambda: pods_of(core, namespace, "web"), 3)
    rs = apps.list_namespaced_replica_set(namespace).items
    assert len(rs) == 1
    template_hash = rs[0].metadata.labels["pod-template-hash"]
    assert rs[0].metadata.name == f"web-{template_hash}"
    assert rs[0].metadata.owner_references[0].kind == "Deployment"
    for pod in pods:
        assert pod.metadata.name.startswith(f"web-{template_hash}-")
        assert pod.metadata.labels["pod-template-hash"] == template_hash
        owner = pod.metadata.owner_references[0]
        assert (owner.kind, owner.name, owner.controller) == ("ReplicaSet", rs[0].metadata.name, True)
        assert pod.status.phase == "Pending"
    status = eventually(lambda: (s := apps.read_namespaced_deployment("web", namespace).status).replicas == 3 and s)
    assert status.ready_replicas in (None, 0)


def test_ready_pods_are_counted_in_status(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 2))
    pods = eventually_items(lambda: pods_of(core, namespace, "web"), 2)
    for pod in pods:
        core.patch_namespaced_pod_status(pod.metadata.name, namespace, {"status": {
            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})  # fmt: skip
    eventually(lambda: apps.read_namespaced_deployment("web", namespace).status.available_replicas == 2)


def test_deleted_or_evicted_pods_are_replaced(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 2))
    pods = eventually_items(lambda: pods_of(core, namespace, "web"), 2)
    core.delete_namespaced_pod(pods[0].metadata.name, namespace)
    core.create_namespaced_pod_eviction(
        pods[1].metadata.name, namespace, client.V1Eviction(metadata=client.V1ObjectMeta(name=pods[1].metadata.name))
    )
    old = {p.metadata.name for p in pods}
    eventually(
        lambda: len(found := pods_of(core, namespace, "web")) == 2 and not old & {p.metadata.name for p in found}
    )


def test_scaling_down_deletes_unbound_pods_first(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    core.create_node(make_node(node := unique("n")))
    apps.create_namespaced_deployment(namespace, deployment("web", 3))
    pods = eventually_items(lambda: pods_of(core, namespace, "web"), 3)
    bound = pods[1].metadata.name
    core.create_namespaced_pod_binding(bound, namespace, client.V1Binding(
        metadata=client.V1ObjectMeta(name=bound), target=client.V1ObjectReference(kind="Node", name=node)),
        _preload_content=False)  # fmt: skip
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 1}})
    remaining = eventually_items(lambda: pods_of(core, namespace, "web"), 1)
    assert remaining[0].metadata.name == bound


def bind(core: CoreApi, namespace: str, pod: str, node: str) -> None:
    core.create_namespaced_pod_binding(pod, namespace, client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod), target=client.V1ObjectReference(kind="Node", name=node)),
        _preload_content=False)  # fmt: skip


def test_scaling_down_takes_pods_from_the_most_crowded_node(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    core.create_node(make_node(crowded := unique("n")))
    core.create_node(make_node(quiet := unique("n")))
    apps.create_namespaced_deployment(namespace, deployment("web", 4))
    pods = eventually_items(lambda: pods_of(core, namespace, "web"), 4)
    for pod, node in zip(pods, (crowded, crowded, crowded, quiet), strict=True):
        bind(core, namespace, pod.metadata.name, node)
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 2}})
    remaining = eventually_items(lambda: pods_of(core, namespace, "web"), 2)
    assert sorted(p.spec.node_name for p in remaining) == sorted([crowded, quiet])


def test_scaling_down_deletes_the_lowest_deletion_cost_first(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 3))
    pods = eventually_items(lambda: pods_of(core, namespace, "web"), 3)
    for pod, cost in zip(pods, ("5", "-3", "100"), strict=True):
        annotations = {"controller.kubernetes.io/pod-deletion-cost": cost}
        core.patch_namespaced_pod(pod.metadata.name, namespace, {"metadata": {"annotations": annotations}})
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 1}})
    remaining = eventually_items(lambda: pods_of(core, namespace, "web"), 1)
    assert remaining[0].metadata.name == pods[2].metadata.name


def test_a_new_template_rolls_to_a_new_replicaset(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 2))
    eventually(lambda: len(pods_of(core, namespace, "web")) == 2)
    apps.patch_namespaced_deployment("web", namespace, {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "nginx:2"}]}}}})  # fmt: skip

    def rolled() -> bool:
        images = {p.spec.containers[0].image for p in pods_of(core, namespace, "web")}
        return images == {"nginx:2"} and len(pods_of(core, namespace, "web")) == 2

    eventually(rolled)
    scales = sorted(rs.spec.replicas for rs in apps.list_namespaced_replica_set(namespace).items)
    assert scales == [0, 2]


def test_deleting_a_deployment_collects_its_replicasets_and_pods(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 2))
    eventually(lambda: len(pods_of(core, namespace, "web")) == 2)
    apps.delete_namespaced_deployment("web", namespace)
    eventually(
        lambda: not apps.list_namespaced_replica_set(namespace).items and not core.list_namespaced_pod(namespace).items
    )


def test_pods_on_a_deleted_node_are_collected(api_server: KubeApiServer, core: CoreApi, namespace: str) -> None:
    core.create_node(make_node(node := unique("n")))
    pod = {"metadata": {"name": "p1"}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}}
    core.create_namespaced_pod(namespace, pod)
    core.delete_node(node)
    eventually(lambda: not core.list_namespaced_pod(namespace).items)


def test_deleting_a_namespace_deletes_its_objects(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 1))
    eventually_items(lambda: pods_of(core, namespace, "web"), 1)
    core.delete_namespace(namespace)
    eventually(
        lambda: (
            not core.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={namespace}").items
            and not apps.list_deployment_for_all_namespaces(field_selector=f"metadata.namespace={namespace}").items
        )
    )


def test_orphan_deletion_keeps_the_dependents(core: CoreApi, apps: AppsApi, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 1))
    eventually_items(lambda: apps.list_namespaced_replica_set(namespace).items, 1)
    apps.delete_namespaced_deployment("web", namespace, propagation_policy="Orphan")
    replica_sets = apps.list_namespaced_replica_set(namespace).items
    assert len(replica_sets) == 1 and not replica_sets[0].metadata.owner_references
