"""Karpenter's own Windows Server 2022 example provisions Windows nodes next to the general-purpose pool,
and a node class nodeflow cannot run here (Karpenter's Windows Server 2025 example: that AMI family needs
Kubernetes 1.35, the local cluster runs 1.32) is reported where Karpenter users look while every other
NodePool keeps provisioning in the same round."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import REPO, deployment
from tests.eventually import eventually

pytestmark = pytest.mark.e2e
EXAMPLES = REPO.parent / "shared" / "karpenter-reference" / "karpenter-examples"
NOT_READY = "spec.amiSelectorTerms[0].alias: Windows2025 requires Kubernetes 1.35 or later"


def condition(stack: DevStack, resource: r.Resource, name: str, type_: str, status: str) -> dict[str, Any] | None:
    conditions = stack.kube.get(resource, name).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_ and c["status"] == status), None)


def node_labels(stack: DevStack, app: str) -> list[dict[str, str]]:
    """The labels of the node each pod of `app` runs on."""
    pods = stack.kube.list(r.POD, namespace="default", label_selector=f"app={app}")
    return [stack.kube.get(r.NODE, p["spec"]["nodeName"])["metadata"]["labels"] for p in pods]


def test_should_provision_windows_nodes_and_report_a_node_class_that_cannot_resolve(stack: DevStack) -> None:
    if not EXAMPLES.is_dir():
        pytest.skip(f"Karpenter examples not found at {EXAMPLES}")
    stack.apply_files(
        [EXAMPLES / "windows-2022.yaml", EXAMPLES / "windows-2025.yaml", EXAMPLES / "general-purpose.yaml"]
    )
    stack.apply_text(
        deployment("iso-web", 3, cpu="500m", memory="512Mi",
                   extra_spec="      nodeSelector: {karpenter.sh/nodepool: general-purpose}")
    )  # fmt: skip
    stack.apply_text(
        deployment("iso-iis", 2, cpu="500m", memory="512Mi",
                   extra_spec="      nodeSelector: {kubernetes.io/os: windows}")
    )  # fmt: skip

    summary = stack.wait_settled(timeout=180)

    assert summary["settled"], summary
    assert {labels["karpenter.sh/nodepool"] for labels in node_labels(stack, "iso-web")} == {"general-purpose"}
    windows = node_labels(stack, "iso-iis")
    assert len(windows) == 2
    assert {labels["karpenter.sh/nodepool"] for labels in windows} == {"windows2022"}
    assert {labels["kubernetes.io/os"] for labels in windows} == {"windows"}
    assert {labels.get("node.kubernetes.io/windows-build") for labels in windows} == {"10.0.20348"}
    assert {labels["kubernetes.io/arch"] for labels in windows} == {"amd64"}
    assert condition(stack, r.EC2NODECLASS, "windows2022", "Ready", "True")
    ready = eventually(
        lambda: condition(stack, r.EC2NODECLASS, "windows2025", "Ready", "False"), timeout=30, what="windows2025 Ready"
    )
    assert ready["reason"] == "NodeClassNotReady"
    assert NOT_READY in ready["message"]
    pool = eventually(
        lambda: condition(stack, r.NODEPOOL, "windows2025", "NodeClassReady", "False"), timeout=30, what="pool"
    )
    assert NOT_READY in pool["message"]
    assert condition(stack, r.NODEPOOL, "windows2025", "Ready", "False")
    for name in ("iso-web", "iso-iis"):
        stack.kube.delete(r.DEPLOYMENT, name, namespace="default")
    for name in ("windows2025", "windows2022"):
        stack.kube.delete(r.NODEPOOL, name)
        stack.kube.delete(r.EC2NODECLASS, name)
