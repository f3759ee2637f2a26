"""activities.replace: the replacement NodeClaim's name and body."""

from __future__ import annotations

from activities.replace import REPLACEMENT_OF_ANNOTATION, replacement_body, replacement_name

ORIGINAL = {
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


def test_names_are_deterministic_per_attempt_and_look_like_karpenters() -> None:
    first = replacement_name("default-bcdfg", "default", 1)
    assert first == replacement_name("default-bcdfg", "default", 1)
    assert first != replacement_name("default-bcdfg", "default", 2)
    assert first.startswith("default-") and len(first) == len("default-") + 5


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
