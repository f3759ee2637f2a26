"""The pods/binding and <workload>/scale subresources."""

from __future__ import annotations

from typing import Any

from devstack.kube import bookkeeping, catalog, errors, patches, verbs
from devstack.kube.catalog import ServedResource
from devstack.kube.routing import Target
from devstack.kube.store import ObjectStore
from devstack.kube.strategic_merge import strategic_merge


def bind(store: ObjectStore, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """POST pods/<name>/binding: set spec.nodeName and PodScheduled=True in one write.

    409 Conflict when the pod is already bound; 400 when the body names no target node.
    """
    target = (body or {}).get("target") if isinstance(body, dict) else None
    node = (target or {}).get("name")
    if not node:
        raise errors.bad_request("Binding.target.name is required: the name of the node to bind the pod to")
    pod = store.get(catalog.POD, namespace, name)
    bound = (pod.get("spec") or {}).get("nodeName")
    if bound:
        raise errors.conflict(catalog.POD, name, f'pod {name} is already assigned to node "{bound}"')
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.conflict(catalog.POD, name, f"pod {name} is being deleted, cannot be assigned to a host")
    new = patches.clone(pod)
    new.setdefault("spec", {})["nodeName"] = node
    now = bookkeeping.timestamp(store.now())
    scheduled = {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
    new = strategic_merge(new, {"status": {"conditions": [scheduled]}})
    store.update(catalog.POD, namespace, name, new, bookkeeping.INTERNAL)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _scale_of(res: ServedResource, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
        },
    }


def get_scale(store: ObjectStore, target: Target) -> dict[str, Any]:
    res = verbs.resource_of(target)
    return _scale_of(res, store.get(res, target.namespace, verbs.name_of(target)))


def write_scale(store: ObjectStore, target: Target, content_type: str | None, body: Any) -> dict[str, Any]:
    """PUT (content_type None) or PATCH a Scale; only spec.replicas is taken from it."""
    res, name = verbs.resource_of(target), verbs.name_of(target)
    current = store.get(res, target.namespace, name)
    scale = _scale_of(res, current)
    if content_type is None:
        new_scale = body
    else:
        kind = content_type.split(";")[0].strip()
        if kind == verbs.JSON_PATCH:
            new_scale = patches.json_patch(scale, body)
        elif kind == verbs.MERGE_PATCH:
            new_scale = patches.merge_patch(scale, body)
        elif kind == verbs.STRATEGIC_PATCH:
            new_scale = strategic_merge(scale, body)
        else:
            raise errors.unsupported_media_type(kind, res)
    replicas = ((new_scale or {}).get("spec") or {}).get("replicas") if isinstance(new_scale, dict) else None
    if not isinstance(replicas, int) or replicas < 0:
        raise errors.invalid(res, name, "spec.replicas", f"{replicas!r} must be a non-negative integer")
    rv = (new_scale.get("metadata") or {}).get("resourceVersion")
    if rv and rv != current["metadata"]["resourceVersion"]:
        raise errors.conflict(res, name)
    new = patches.clone(current)
    new.setdefault("spec", {})["replicas"] = replicas
    return _scale_of(res, store.update(res, target.namespace, name, new))
