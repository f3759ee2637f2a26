"""Which pods the provisioner acts on."""

from __future__ import annotations

from typing import Any

import pytest

from scheduling.provisioning.provisionable import is_provisionable, pod_key


def make_pod(
    *, node: str | None = None, unschedulable: bool = True, deleting: bool = False, phase: str = "Pending",
    owner_kind: str | None = None, nominated: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}, "status": {"phase": phase}}
    if node:
        pod["spec"]["nodeName"] = node
    if unschedulable:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    if nominated:
        pod["status"]["nominatedNodeName"] = nominated
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner_kind:
        pod["metadata"]["ownerReferences"] = [{"kind": owner_kind, "name": "o", "uid": "u", "apiVersion": "apps/v1"}]
    return pod


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (make_pod(), True),
        (make_pod(owner_kind="ReplicaSet"), True),
        (make_pod(node="n1"), False),
        (make_pod(unschedulable=False), False),
        (make_pod(deleting=True), False),
        (make_pod(phase="Succeeded"), False),
        (make_pod(owner_kind="DaemonSet"), False),
        (make_pod(nominated="n1"), False),
    ],
    ids=[
        "pending-unschedulable",
        "replicaset-pod",
        "bound",
        "not-yet-marked",
        "deleting",
        "finished",
        "daemonset",
        "preempting",
    ],
)
def test_is_provisionable(pod: dict[str, Any], expected: bool) -> None:
    assert is_provisionable(pod) is expected


def test_pod_key_is_namespace_slash_name() -> None:
    assert pod_key(make_pod()) == "ns/p"
