"""Replacing a NodeClaim (the `replace` signal): the replacement's name and body. Pure.

The replacement is a new NodeClaim with the original's spec, labels and annotations; the labels the
launch added (instance type, zone, capacity type and the type's other well-known labels) are dropped so
the replacement may land on any offering its requirements allow, exactly like a freshly planned claim.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from apis import labels

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_NAME_LENGTH = 63
REPLACEMENT_OF_ANNOTATION = "nodeflow.dev/replacement-of"


def replacement_name(original: str, node_pool: str, attempt: int) -> str:
    """`<nodepool>-<5 chars>` derived from the original's name and the attempt number: a retried activity
    names the same replacement, a second `replace` of the same claim a different one."""
    digest = hashlib.sha256(f"replace\n{original}\n{attempt}".encode()).digest()
    suffix = "".join(NAME_ALPHABET[b % len(NAME_ALPHABET)] for b in digest[:5])
    prefix = (node_pool or original)[: MAX_NAME_LENGTH - len(suffix) - 1]
    return f"{prefix}-{suffix}"


def replacement_body(original: dict[str, Any], name: str) -> dict[str, Any]:
    """The NodeClaim to create for `name`, from the original NodeClaim object (as read from the API)."""
    meta = original.get("metadata", {})
    kept_labels = {
        k: v for k, v in (meta.get("labels") or {}).items() if k == labels.NODEPOOL or k not in labels.WELL_KNOWN_LABELS
    }
    annotations = dict(meta.get("annotations") or {})
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
        "spec": copy.deepcopy(original.get("spec") or {}),
    }
    if meta.get("ownerReferences"):
        body["metadata"]["ownerReferences"] = copy.deepcopy(meta["ownerReferences"])
    return body
