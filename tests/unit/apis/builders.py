"""Valid API documents to start each test from, the reference-data location, and small helpers."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
CLUSTER_NAME = "test-cluster"


def reference_dir() -> Path:
    """The Karpenter reference data (`<repo>/../shared/karpenter-reference`, or NODEFLOW_KARPENTER_REFERENCE);
    skips the calling test when it is absent."""
    path = Path(os.environ.get("NODEFLOW_KARPENTER_REFERENCE", REPO_ROOT.parent / "shared" / "karpenter-reference"))
    if not path.is_dir():
        pytest.skip(f"Karpenter reference data not found at {path}; set NODEFLOW_KARPENTER_REFERENCE to its folder")
    return path


def example_files() -> list[Path]:
    """The upstream example manifests (not the workloads subfolder)."""
    return sorted((reference_dir() / "karpenter-examples").glob("*.yaml"))


def nodepool_doc() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "metadata": {"labels": {"team": "web"}},
                "spec": {
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
                    ],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "taints": [{"key": "example.com/dedicated", "value": "web", "effect": "NoSchedule"}],
                    "expireAfter": "720h",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
            "limits": {"cpu": 1000, "memory": "1000Gi"},
            "weight": 10,
        },
    }


def nodeclaim_doc() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-abcde", "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {
            "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]}],
            "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}},
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        },
    }


def ec2nodeclass_doc() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-test",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER_NAME}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER_NAME}}],
        },
    }


def with_value(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `doc` with the value at a dotted path ("spec.weight", "spec.terms.0.id") replaced;
    the value `DELETE` removes the key."""
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node: Any = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if isinstance(node, list):
        node[int(last)] = value
    elif value is DELETE:
        del node[last]
    else:
        node[last] = value
    return out


DELETE = object()


def keys_of(value: Any) -> Any:
    """The key structure of a document (mappings' keys recursively, list items by position), values dropped."""
    if isinstance(value, dict):
        return {k: keys_of(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keys_of(v) for v in value]
    return None
