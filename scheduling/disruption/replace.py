"""Replacing a NodeClaim (a manual replace, activities.disruption.manual_replacement): the replacement's body. Pure.

The replacement is a new NodeClaim with the original's requirements and resources, so the original's pods
fit it; the labels the launch added (instance type, zone, capacity type and the type's other well-known
labels) are dropped so it may land on any offering its requirements allow, like a freshly planned claim.
With its NodePool (the usual case), what the NodePool's template decides comes from the template as it
is now: labels and annotations on top of the original's, taints, startup taints, expireAfter,
terminationGracePeriod, the node class, and the template hash. So replacing a node whose NodePool
template changed (NodePoolDrifted) gives a node that has not drifted; a node class change is recorded
at the replacement's launch. A node drifted by its NodePool's requirements (RequirementsDrifted) keeps
them: its pods need the provisioner to plan for them again, which draining the node does.
"""

from __future__ import annotations

import copy
from typing import Any

from apis import labels
from apis.nodepool import NodePool

REPLACEMENT_OF_ANNOTATION = "nodeflow.dev/replacement-of"

HASH_ANNOTATIONS = (
    labels.NODEPOOL_HASH_ANNOTATION,
    labels.NODEPOOL_HASH_VERSION_ANNOTATION,
    labels.NODECLASS_HASH_ANNOTATION,
    labels.NODECLASS_HASH_VERSION_ANNOTATION,
)


def replacement_body(original: dict[str, Any], name: str, pool: NodePool | None = None) -> dict[str, Any]:
    """The NodeClaim to create for `name`, from the original NodeClaim object (as read from the API) and
    its NodePool when it still exists (see the module docstring)."""
    meta = original.get("metadata", {})
    kept_labels = {
        k: v for k, v in (meta.get("labels") or {}).items() if k == labels.NODEPOOL or k not in labels.WELL_KNOWN_LABELS
    }
    annotations = dict(meta.get("annotations") or {})
    spec = copy.deepcopy(original.get("spec") or {})
    if pool is not None:
        template = pool.spec.template
        kept_labels |= template.metadata.labels
        annotations = {k: v for k, v in annotations.items() if k not in HASH_ANNOTATIONS}
        annotations |= template.metadata.annotations | pool.hash_annotations()
        for key, value in _template_spec(pool).items():
            spec.pop(key, None)
            if value not in (None, []):
                spec[key] = value
    annotations[REPLACEMENT_OF_ANNOTATION] = str(meta.get("name", ""))
    body: dict[str, Any] = {
        "apiVersion": original.get("apiVersion", "karpenter.sh/v1"),
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": kept_labels,
            "annotations": annotations,
            "finalizers": [labels.TERMINATION_FINALIZER],
        },
        "spec": spec,
    }
    if meta.get("ownerReferences"):
        body["metadata"]["ownerReferences"] = copy.deepcopy(meta["ownerReferences"])
    return body


def _template_spec(pool: NodePool) -> dict[str, Any]:
    """The NodeClaim spec fields the NodePool's template decides, as the API serves them (None or [] when
    the template leaves one unset)."""
    template = pool.spec.template.spec
    return {
        "nodeClassRef": template.node_class_ref.to_kube(),
        "taints": [t.to_kube() for t in template.taints],
        "startupTaints": [t.to_kube() for t in template.startup_taints],
        "expireAfter": template.expire_after,
        "terminationGracePeriod": template.termination_grace_period,
    }
