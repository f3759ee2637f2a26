"""Helpers about ``metadata.ownerReferences`` shared by the controllers."""

from __future__ import annotations

from typing import Any

from devstack.kube.catalog import ServedResource


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true``, if any."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def is_controlled_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"]["uid"]


def owner_reference(res: ServedResource, owner: dict[str, Any]) -> dict[str, Any]:
    """A controller ownerReference pointing at ``owner`` (blockOwnerDeletion, like the real controllers)."""
    return {
        "apiVersion": res.api_version,
        "kind": res.kind,
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_deleting(obj: dict[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))
