"""Server-owned metadata: what the API server sets or guards on create and update.

Pure functions over JSON objects. The store calls them with the next resourceVersion; they
return a new object and raise ``ApiError`` 422 naming the field when a client breaks a rule.
"""

from __future__ import annotations

import datetime
import secrets
import uuid
from typing import Any

from devstack.kube import errors
from devstack.kube.catalog import ServedResource
from devstack.kube.patches import clone

# Kinds whose create strategy resets status (pods start Pending; CRs with a status subresource drop it).
# Required status fields are present (zero) as the real API's Go structs serialize them, so
# typed clients can decode a new object.
_STATUS_ON_CREATE: dict[str, dict[str, Any]] = {
    "Pod": {"phase": "Pending"},
    "Namespace": {"phase": "Active"},
    "Deployment": {},
    "ReplicaSet": {"replicas": 0},
    "DaemonSet": {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "PodDisruptionBudget": {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0},
}
_SERVER_META = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_CRD_KIND, _CRD_GROUP = "CustomResourceDefinition", "apiextensions.k8s.io"
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

# ``subresource`` value for server-internal writes (bindings, controllers) that may change both
# spec and status in one resourceVersion, as the real registry does for pods/binding.
INTERNAL = "<internal>"


def timestamp(moment: datetime.datetime) -> str:
    """RFC 3339 in UTC with second precision, the form the API uses for metadata times."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generated_name(prefix: str) -> str:
    """``prefix`` plus five random characters from the alphabet the apiserver uses."""
    return prefix + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


def prepare_create(
    res: ServedResource, obj: Any, namespace: str | None, now: datetime.datetime, rv: int
) -> dict[str, Any]:
    """A new object as stored: name (or generateName), uid, resourceVersion, timestamps, status reset."""
    if not isinstance(obj, dict):
        raise errors.bad_request(f"the body of a {res.kind} create must be a JSON object")
    new = clone(obj)
    meta = new.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be a JSON object")
    for key in _SERVER_META:
        meta.pop(key, None)
    if not meta.get("name"):
        if not meta.get("generateName"):
            raise errors.invalid(res, "", "metadata.name", "Required value: name or generateName is required")
        meta["name"] = generated_name(meta["generateName"])
    if res.namespaced:
        if meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace or meta.get("namespace") or "default"
    else:
        meta.pop("namespace", None)
    meta.update(uid=str(uuid.uuid4()), resourceVersion=str(rv), creationTimestamp=timestamp(now), generation=1)
    new["kind"], new["apiVersion"] = res.kind, res.api_version
    if res.kind in _STATUS_ON_CREATE:
        new["status"] = clone(_STATUS_ON_CREATE[res.kind])
    elif res.kind == _CRD_KIND and res.group == _CRD_GROUP:
        new["status"] = crd_status(new, now)
    elif not res.builtin and res.has_status:
        new.pop("status", None)
    return new


def crd_status(crd: dict[str, Any], now: datetime.datetime) -> dict[str, Any]:
    """The status the real server's controllers give a CustomResourceDefinition at once here: names
    accepted, Established, and the storage version(s) recorded (``kubectl wait --for
    condition=established`` returns)."""
    spec: dict[str, Any] = crd["spec"] if isinstance(crd.get("spec"), dict) else {}
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    stored = [str(v.get("name")) for v in versions if v.get("storage")]
    moment = timestamp(now)
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": moment, "reason": reason, "message": message}
        for kind, reason, message in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
    return {"acceptedNames": clone(spec.get("names") or {}), "conditions": conditions, "storedVersions": stored}


def prepare_update(
    res: ServedResource, old: dict[str, Any], obj: Any, subresource: str | None, rv: int
) -> dict[str, Any]:
    """The object as stored after a full update of the main resource or of ``/status``.

    The main endpoint cannot change status and ``/status`` can change only status (for kinds
    with a status subresource); ``INTERNAL`` writes may change both. Server-owned metadata
    always comes from ``old``.
    """
    if not isinstance(obj, dict):
        raise errors.bad_request(f"the body of a {res.kind} update must be a JSON object")
    name = old["metadata"]["name"]
    if subresource == "status":
        new = clone(old)
        if "status" in obj:
            new["status"] = clone(obj["status"])
        else:
            new.pop("status", None)
    else:
        new = clone(obj)
        new.setdefault("metadata", {})
        if res.has_status and subresource != INTERNAL:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
    meta, old_meta = new["metadata"], old["metadata"]
    if meta.get("name", name) != name:
        raise errors.invalid(res, name, "metadata.name", "field is immutable: the name in the body must match the URL")
    for key in (*_SERVER_META, "name", "namespace"):
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    _check_finalizers(res, old_meta, meta)
    if _spec_part(new) != _spec_part(old):
        meta["generation"] = int(old_meta.get("generation", 1)) + 1
    meta["resourceVersion"] = str(rv)
    new["kind"], new["apiVersion"] = res.kind, res.api_version
    return new


def _check_finalizers(res: ServedResource, old_meta: dict[str, Any], meta: dict[str, Any]) -> None:
    if not old_meta.get("deletionTimestamp"):
        return
    added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
    if added:
        raise errors.invalid(
            res,
            old_meta["name"],
            "metadata.finalizers",
            f"Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added!r}",
        )


def same_content(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when two stored versions differ at most in resourceVersion (a no-op write)."""
    meta_a = {k: v for k, v in a.get("metadata", {}).items() if k != "resourceVersion"}
    meta_b = {k: v for k, v in b.get("metadata", {}).items() if k != "resourceVersion"}
    return meta_a == meta_b and {k: v for k, v in a.items() if k != "metadata"} == {
        k: v for k, v in b.items() if k != "metadata"
    }
