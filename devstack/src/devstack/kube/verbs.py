"""The REST verbs on stored objects: get, list, create, update (PUT), patch, delete, deletecollection.

Each function takes the store, the resolved target and the request's query parameters / body,
and returns ``(http status, JSON body)``. Rules that are not about one verb live elsewhere
(bookkeeping, selectors, patches, watch, eviction).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from devstack.kube import errors, patches, selectors
from devstack.kube.bookkeeping import INTERNAL
from devstack.kube.catalog import SERVED, ServedResource
from devstack.kube.routing import Target
from devstack.kube.store import ObjectStore
from devstack.kube.strategic_merge import strategic_merge

Reply = tuple[int, Any]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def name_of(target: Target) -> str:
    """The object name of a target the router resolved to one object."""
    assert target.name is not None, "routing only sends named targets here"
    return target.name


def resource_of(target: Target) -> ServedResource:
    """The resource of a target the router resolved to a served resource."""
    assert target.resource is not None, "routing only sends resource targets here"
    return target.resource


def get(store: ObjectStore, target: Target) -> Reply:
    return 200, store.get(resource_of(target), target.namespace, name_of(target))


def list_predicate(params: Mapping[str, str]) -> selectors.Predicate | None:
    """Label and field selectors of a list or watch request combined into one predicate."""
    by_label = selectors.parse_label_selector(params.get("labelSelector"))
    by_field = selectors.parse_field_selector(params.get("fieldSelector"))
    if by_label and by_field:
        return lambda obj: by_label(obj) and by_field(obj)
    return by_label or by_field


def _continue_token(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    raw = json.dumps([meta.get("namespace") or "", meta["name"]]).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _after_token(token: str) -> tuple[str, str]:
    try:
        ns, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(ns), str(name)
    except (ValueError, TypeError):
        raise errors.bad_request(f"continue: {token!r} is not a continue token returned by this server") from None


def list_objects(store: ObjectStore, target: Target, params: Mapping[str, str]) -> Reply:
    """A ``<Kind>List``; honours selectors, ``limit`` and ``continue`` (pages in (namespace, name) order)."""
    res = resource_of(target)
    items = store.list(res, target.namespace, list_predicate(params))
    metadata: dict[str, Any] = {"resourceVersion": str(store.resource_version)}
    if params.get("continue"):
        after = _after_token(params["continue"])
        items = [o for o in items if (o["metadata"].get("namespace") or "", o["metadata"]["name"]) > after]
    limit = int(params.get("limit") or 0)
    if 0 < limit < len(items):
        metadata["continue"] = _continue_token(items[limit - 1])
        metadata["remainingItemCount"] = len(items) - limit
        items = items[:limit]
    return 200, {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": metadata, "items": items}


def create(store: ObjectStore, target: Target, body: Any) -> Reply:
    return 201, store.create(resource_of(target), target.namespace, body)


def _body_rv(body: Any) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
        rv = body["metadata"].get("resourceVersion")
        return str(rv) if rv else None
    return None


def update(store: ObjectStore, target: Target, body: Any) -> Reply:
    """PUT: replace the object (or its status); a resourceVersion in the body must be current."""
    res, name = resource_of(target), name_of(target)
    if isinstance(body, dict):
        body_name = (body.get("metadata") or {}).get("name")
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
    return 200, store.update(res, target.namespace, name, body, target.subresource, _body_rv(body))


def patched(store: ObjectStore, target: Target, content_type: str, body: Any) -> tuple[dict[str, Any], Any]:
    """The current object and the result of applying the patch to it (not stored yet)."""
    res, name = resource_of(target), name_of(target)
    current = store.get(res, target.namespace, name)
    kind = content_type.split(";")[0].strip()
    if kind == JSON_PATCH:
        return current, patches.json_patch(current, body)
    if kind == MERGE_PATCH:
        return current, patches.merge_patch(current, body)
    if kind == STRATEGIC_PATCH and res.builtin:
        return current, strategic_merge(current, body)
    if kind == APPLY_PATCH:
        raise errors.ApiError(
            415,
            "UnsupportedMediaType",
            "server-side apply is not supported by the nodeflow "
            "Kubernetes emulator: use client-side apply (kubectl apply without --server-side)",
        )
    raise errors.unsupported_media_type(kind, res)


def patch(store: ObjectStore, target: Target, content_type: str, body: Any) -> Reply:
    """PATCH: JSON patch, merge patch, or strategic merge patch (built-in kinds only, like the real API).

    A resourceVersion written by the patch is a precondition: a stale one gives 409 Conflict.
    """
    res, name = resource_of(target), name_of(target)
    current, result = patched(store, target, content_type, body)
    if not isinstance(result, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    rv = _body_rv(result)
    if rv is not None and rv != current["metadata"]["resourceVersion"]:
        raise errors.conflict(res, name)
    return 200, store.update(res, target.namespace, name, result, target.subresource)


def delete_options(params: Mapping[str, str], body: Any) -> tuple[dict[str, Any], int]:
    """Preconditions and grace period from a DeleteOptions body or the query string."""
    options = body if isinstance(body, dict) else {}
    grace = options.get("gracePeriodSeconds", params.get("gracePeriodSeconds", 0))
    try:
        grace_seconds = int(grace or 0)
    except (TypeError, ValueError):
        raise errors.bad_request(f"gracePeriodSeconds: {grace!r} is not an integer") from None
    return options.get("preconditions") or {}, grace_seconds


def delete(store: ObjectStore, target: Target, params: Mapping[str, str], body: Any) -> Reply:
    """DELETE one object. ``propagationPolicy: Orphan`` first removes the owner from its dependents'
    ownerReferences; Foreground is treated as Background (dependents go after the owner)."""
    preconditions, grace = delete_options(params, body)
    res, name = resource_of(target), name_of(target)
    policy = (body or {}).get("propagationPolicy") if isinstance(body, dict) else None
    if (policy or params.get("propagationPolicy")) == "Orphan":
        _orphan_dependents(store, store.get(res, target.namespace, name))
    return 200, store.delete(res, target.namespace, name, preconditions, grace)


def _orphan_dependents(store: ObjectStore, owner: dict[str, Any]) -> None:
    uid = owner["metadata"]["uid"]
    for res in SERVED:
        for obj in store.list(res):
            refs = obj["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in refs):
                kept = [r for r in refs if r.get("uid") != uid]
                changed = {**obj, "metadata": {**obj["metadata"], "ownerReferences": kept}}
                store.update(res, obj["metadata"].get("namespace"), obj["metadata"]["name"], changed, INTERNAL)


def delete_collection(store: ObjectStore, target: Target, params: Mapping[str, str]) -> Reply:
    """DELETE on a collection: every selected object, returned as a ``<Kind>List``."""
    res = resource_of(target)
    deleted = [
        store.delete(res, o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in store.list(res, target.namespace, list_predicate(params))
    ]
    return 200, {
        "kind": f"{res.kind}List",
        "apiVersion": res.api_version,
        "metadata": {"resourceVersion": str(store.resource_version)},
        "items": deleted,
    }
