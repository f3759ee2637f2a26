"""The world of the NodeClaim phase activity tests: a NodePool, its EC2NodeClass, one NodeClaim
(`default-abcde`, its Node `node-1`), over MemKube (which refuses Node and NodeClaim writes that do not
go through activities.nodeclaim.ownership) and the fake cloud provider. Fixtures are in conftest.py."""

from __future__ import annotations

from typing import Any

from apis.nodepool import TEMPLATE_HASH_VERSION, NodePool
from kube import resources as r
from kube.fake import MemKube

NAME = "default-abcde"
NODE = "node-1"
POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "a"}},
            "spec": {
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            },
        }
    },
}
NODE_CLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
    },
}


def claim_body(image_id: str = "ami-fake") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": NAME,
            "labels": {"karpenter.sh/nodepool": "default", "team": "a", "karpenter.sh/capacity-type": "on-demand"},
            "annotations": {
                "karpenter.sh/nodepool-hash": NodePool.model_validate(POOL).template_hash(),
                "karpenter.sh/nodepool-hash-version": TEMPLATE_HASH_VERSION,
            },
            "finalizers": ["karpenter.sh/termination"],
        },
        "spec": {
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        },
        "status": {"imageID": image_id, "nodeName": NODE},
    }


def pod(name: str, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", **extra.pop("meta", {})}
    return {"metadata": meta, "spec": {"nodeName": NODE, **extra}, "status": {"phase": "Running"}}


def claim(kube: MemKube) -> dict[str, Any]:
    return kube.get(r.NODECLAIM, NAME)


def condition(kube: MemKube, type_: str) -> dict[str, Any] | None:
    conditions = claim(kube).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), None)


def uid(kube: MemKube, resource: r.Resource = r.NODECLAIM, name: str = NAME) -> str:
    return str(kube.get(resource, name)["metadata"]["uid"])


def as_admin_patch(kube: MemKube, resource: r.Resource, name: str, patch: dict[str, Any], **kw: Any) -> None:
    """A change the test arranges (not an activity's write)."""
    with kube.as_admin():
        kube.patch(resource, name, patch, **kw)
