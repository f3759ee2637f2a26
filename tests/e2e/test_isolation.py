"""A node class nodeflow cannot run (Karpenter's own Windows example) is reported where Karpenter users
look, and every other NodePool keeps provisioning in the same round."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import REPO, deployment
from tests.eventually import eventually

pytestmark = pytest.mark.e2e
EXAMPLES = REPO.parent / "shared" / "karpenter-reference" / "karpenter-examples"
UNSUPPORTED = 'spec.amiSelectorTerms[0].alias: "windows2022@latest" is not supported by nodeflow yet'


def condition(stack: DevStack, resource: r.Resource, name: str, type_: str, status: str) -> dict[str, Any] | None:
    conditions = stack.kube.get(resource, name).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_ and c["status"] == status), None)


def test_should_report_a_windows_node_class_and_keep_provisioning_the_general_purpose_pool(stack: DevStack) -> None:
    if not EXAMPLES.is_dir():
        pytest.skip(f"Karpenter examples not found at {EXAMPLES}")
    stack.apply_files([EXAMPLES / "windows-2022.yaml", EXAMPLES / "general-purpose.yaml"])
    stack.apply_text(
        deployment("iso-web", 3, cpu="500m", memory="512Mi",
                   extra_spec="      nodeSelector: {karpenter.sh/nodepool: general-purpose}")
    )  # fmt: skip

    summary = stack.wait_settled(timeout=120)

    assert summary["settled"], summary
    pods = stack.kube.list(r.POD, namespace="default", label_selector="app=iso-web")
    nodes = {stack.kube.get(r.NODE, p["spec"]["nodeName"])["metadata"]["labels"]["karpenter.sh/nodepool"] for p in pods}
    assert nodes == {"general-purpose"}
    ready = eventually(
        lambda: condition(stack, r.EC2NODECLASS, "windows2022", "Ready", "False"), timeout=30, what="windows2022 Ready"
    )
    assert ready["reason"] == "NodeClassNotReady"
    assert UNSUPPORTED in ready["message"] and "use al2023, al2 or bottlerocket" in ready["message"]
    pool = eventually(
        lambda: condition(stack, r.NODEPOOL, "windows2022", "NodeClassReady", "False"), timeout=30, what="pool"
    )
    assert UNSUPPORTED in pool["message"]
    assert condition(stack, r.NODEPOOL, "windows2022", "Ready", "False")
    stack.kube.delete(r.NODEPOOL, "windows2022")
    stack.kube.delete(r.EC2NODECLASS, "windows2022")
