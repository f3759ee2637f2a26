"""Manifest expansion: workloads into pods, bound pods, volumes, invalid objects reported."""

from __future__ import annotations

from typing import Any

from scheduling.provisioning.manifests import expand

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                     "name": "default"}}}},
}  # fmt: skip


def workload(kind: str, replicas: int = 3, **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    key = "parallelism" if kind == "Job" else "replicas"
    return {"kind": kind, "metadata": {"name": "app", "namespace": "ns"}, "spec": {key: replicas, "template": template,
                                                                                  **spec}}  # fmt: skip


def test_workloads_expand_by_replicas_with_deterministic_names() -> None:
    for kind in ("Deployment", "ReplicaSet", "StatefulSet", "Job"):
        out = expand([workload(kind)], [])
        assert [p["metadata"]["name"] for p in out.input.pods] == ["app-0", "app-1", "app-2"], kind
        assert out.input.pods[0]["metadata"]["labels"] == {"app": "a"}
        assert not out.errors


def test_statefulset_claim_templates_become_pvcs() -> None:
    vct = [{"metadata": {"name": "data"}, "spec": {"storageClassName": "gp3"}}]
    out = expand([workload("StatefulSet", 2, volumeClaimTemplates=vct)], [])
    assert [p["metadata"]["name"] for p in out.input.persistent_volume_claims] == ["data-app-0", "data-app-1"]
    assert out.input.pods[1]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "data-app-1"


def test_pods_with_node_name_are_bound_and_lists_unpacked() -> None:
    bound = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": []}}
    node = {"kind": "Node", "metadata": {"name": "n1"}}
    out = expand([{"kind": "List", "items": [bound, node]}], [])
    assert len(out.input.bound_pods) == 1 and len(out.input.nodes) == 1 and not out.input.pods


def test_invalid_objects_are_reported_and_the_rest_kept() -> None:
    bad = {**NODEPOOL, "metadata": {"name": "bad"}, "spec": {**NODEPOOL["spec"], "limits": {"cpu": "lots"}}}
    out = expand([bad, NODEPOOL, workload("Deployment", replicas=-1), workload("Job", 1)], [])
    assert [p.name for p in out.input.node_pools] == ["default"]
    assert any(e.startswith('NodePool "bad": spec.limits.cpu') for e in out.errors), out.errors
    assert any(e.startswith('Deployment "ns/app": spec.replicas') for e in out.errors), out.errors
    assert len(out.input.pods) == 1


def test_unknown_kinds_are_reported_known_ignorable_kinds_are_not() -> None:
    out = expand([{"kind": "Service", "metadata": {"name": "s"}}, {"kind": "Widget", "metadata": {"name": "w"}}], [])
    assert out.errors == ['Widget "w": kind not simulated; ignored']
