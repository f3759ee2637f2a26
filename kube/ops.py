"""Small, safe read-modify-write helpers over the Kube boundary (optimistic concurrency on conflicts)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any, Protocol

from kube.errors import AlreadyExistsError, ConflictError, NotFoundError
from kube.resources import Resource
from kube.types import Kube, Obj

MAX_CONFLICT_RETRIES = 8


class Recorder(Protocol):
    """Records Kubernetes Events (see kube.events.EventRecorder). Never raises."""

    def record(self, involved: Obj, event_type: str, reason: str, message: str) -> None: ...


def update(
    kube: Kube, resource: Resource, name: str, mutate: Callable[[Obj], bool], subresource: str | None = None
) -> Obj | None:
    """Read the object, let `mutate` change it in place (returning False when nothing changed), and write
    the changed top-level section back as a merge patch carrying the resourceVersion read, so a concurrent
    writer makes it retry instead of being overwritten. Returns the object, or None when it does not exist.
    """
    for _ in range(MAX_CONFLICT_RETRIES):
        try:
            current = kube.get(resource, name)
        except NotFoundError:
            return None
        desired = copy.deepcopy(current)
        if not mutate(desired):
            return current
        section = "status" if subresource == "status" else None
        patch: dict[str, Any] = {"metadata": {"resourceVersion": current["metadata"].get("resourceVersion")}}
        if section:
            patch["status"] = desired.get("status", {})
        else:
            patch["metadata"].update(
                {
                    k: desired["metadata"].get(k)
                    for k in ("labels", "annotations", "finalizers", "ownerReferences")
                    if k in desired["metadata"]
                }
            )
            if "spec" in desired:
                patch["spec"] = desired["spec"]
        try:
            return kube.patch(resource, name, patch, patch_type="merge", subresource=subresource)
        except ConflictError:
            continue
        except NotFoundError:
            return None
    raise ConflictError(f"{resource.kind} {name}: still conflicting after {MAX_CONFLICT_RETRIES} attempts")


def get_or_none(kube: Kube, resource: Resource, name: str, namespace: str | None = None) -> Obj | None:
    """The object, or None when it does not exist."""
    try:
        return kube.get(resource, name, namespace)
    except NotFoundError:
        return None


def create_or_get(kube: Kube, resource: Resource, body: Obj) -> tuple[Obj | None, bool]:
    """Create `body`, or find the object of its name an earlier try created: (the object as the API
    returns it, whether this call created it). The object is None when it existed and is gone already."""
    try:
        return kube.create(resource, body), True
    except AlreadyExistsError:
        return get_or_none(kube, resource, body["metadata"]["name"]), False


def has_taint(obj: Obj, key: str, effect: str) -> bool:
    return any(t.get("key") == key and t.get("effect") == effect for t in obj.get("spec", {}).get("taints") or [])


def without_taint(taints: list[dict[str, Any]], key: str, effect: str | None = None) -> list[dict[str, Any]]:
    return [t for t in taints if not (t.get("key") == key and (effect is None or t.get("effect") == effect))]


def dropping_finalizer(finalizer: str) -> Callable[[Obj], bool]:
    """A mutation for `update` that removes one finalizer (False when it is absent)."""

    def mutate(obj: Obj) -> bool:
        finalizers = obj["metadata"].get("finalizers") or []
        if finalizer not in finalizers:
            return False
        obj["metadata"]["finalizers"] = [f for f in finalizers if f != finalizer]
        return True

    return mutate


def adding_taint(key: str, effect: str) -> Callable[[Obj], bool]:
    """A mutation for `update` that adds the taint `key:effect` (False when the object has it)."""

    def mutate(obj: Obj) -> bool:
        if has_taint(obj, key, effect):
            return False
        spec = obj.setdefault("spec", {})
        spec["taints"] = [*(spec.get("taints") or []), {"key": key, "effect": effect}]
        return True

    return mutate


def removing_taint(key: str, effect: str) -> Callable[[Obj], bool]:
    """A mutation for `update` that removes the taint `key:effect` (False when the object has none)."""

    def mutate(obj: Obj) -> bool:
        taints = (obj.get("spec") or {}).get("taints") or []
        kept = without_taint(taints, key, effect)
        if len(kept) == len(taints):
            return False
        obj["spec"]["taints"] = kept
        return True

    return mutate


def remove_finalizer(kube: Kube, resource: Resource, name: str, finalizer: str) -> None:
    """Remove one finalizer (no-op when absent or the object is gone)."""
    update(kube, resource, name, dropping_finalizer(finalizer))


def delete_quietly(kube: Kube, resource: Resource, name: str, namespace: str | None = None) -> None:
    """Delete; already gone is fine."""
    with contextlib.suppress(NotFoundError):
        kube.delete(resource, name, namespace)
