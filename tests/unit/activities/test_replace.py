"""scheduling.disruption.replace: the replacement NodeClaim's name and body."""

from __future__ import annotations

from typing import Any

from apis.nodepool import TEMPLATE_HASH_VERSION, NodePool
from scheduling.disruption.replace import REPLACEMENT_OF_ANNOTATION, replacement_body

ORIGINAL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {
        "name": "default-bcdfg",
        "uid": "u-1",
        "resourceVersion": "7",
        "labels": {
            "karpenter.sh/nodepool": "default",
            "team": "a",
            "node.kubernetes.io/instance-type": "m5.large",
            "topology.kubernetes.io/zone": "us-west-2a",
            "karpenter.sh/capacity-type": "on-demand",
        },
        "annotations": {"karpenter.sh/nodepool-hash": "123", "karpenter.sh/nodepool-hash-version": "v3"},
        "finalizers": ["karpenter.sh/termination"],
        "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "default", "uid": "p"}],
    },
    "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
    "status": {"providerID": "aws:///us-west-2a/i-1"},
}


def test_the_body_keeps_spec_labels_and_annotations_but_not_the_launch_choices() -> None:
    body = replacement_body(ORIGINAL, "default-xyzab")
    meta = body["metadata"]
    assert meta["name"] == "default-xyzab"
    assert meta["labels"] == {"karpenter.sh/nodepool": "default", "team": "a"}
    assert meta["annotations"]["karpenter.sh/nodepool-hash"] == "123"
    assert meta["annotations"][REPLACEMENT_OF_ANNOTATION] == "default-bcdfg"
    assert meta["finalizers"] == ["karpenter.sh/termination"]
    assert meta["ownerReferences"][0]["kind"] == "NodePool"
    assert "uid" not in meta and "resourceVersion" not in meta
    assert body["spec"] == ORIGINAL["spec"] and body["spec"] is not ORIGINAL["spec"]
    assert "status" not in body


def pool(**template_spec: Any) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"team": "b", "tier": "gold"}, "annotations": {"owner": "ops"}},
                    "spec": {
                        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "v2"},
                        "taints": [{"key": "dedicated", "value": "gold", "effect": "NoSchedule"}],
                        "expireAfter": "168h",
                        **template_spec,
                    },
                }
            },
        }
    )


def test_with_its_nodepool_the_template_parts_are_the_templates_now() -> None:
    original = {
        **ORIGINAL,
        "metadata": {
            **ORIGINAL["metadata"],
            "annotations": {
                **ORIGINAL["metadata"]["annotations"],
                "karpenter.k8s.aws/ec2nodeclass-hash": "9",
                "karpenter.k8s.aws/ec2nodeclass-hash-version": "nodeflow-v1",
                "note": "kept",
            },
        },
        "spec": {
            **ORIGINAL["spec"],
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}],
            "resources": {"requests": {"cpu": "1"}},
            "startupTaints": [{"key": "old", "effect": "NoSchedule"}],
            "terminationGracePeriod": "1h",
        },
    }
    current = pool()
    body = replacement_body(original, "default-xyzab", current)
    meta, spec = body["metadata"], body["spec"]
    assert meta["labels"] == {"karpenter.sh/nodepool": "default", "team": "b", "tier": "gold"}
    assert meta["annotations"] == {
        "note": "kept",
        "owner": "ops",
        "karpenter.sh/nodepool-hash": current.template_hash(),
        "karpenter.sh/nodepool-hash-version": TEMPLATE_HASH_VERSION,
        REPLACEMENT_OF_ANNOTATION: "default-bcdfg",
    }  # the node class hash is stamped at the replacement's launch
    assert spec["requirements"] == original["spec"]["requirements"]
    assert spec["resources"] == {"requests": {"cpu": "1"}}
    assert spec["nodeClassRef"]["name"] == "v2"
    assert spec["taints"] == [{"key": "dedicated", "value": "gold", "effect": "NoSchedule"}]
    assert spec["expireAfter"] == "168h"
    assert "startupTaints" not in spec and "terminationGracePeriod" not in spec  # the template has none now
