"""Writes to a claim's own NodeClaim and Node, and nothing else: the one way activities change them.

A workflow can outlive its NodeClaim (a finalizer removed by hand, a cluster restored from backup, a
local stack restarted with the old Temporal database), and node names repeat (they come from private IPs).
So a claim's objects are identified as Karpenter does, not by name alone:

- its NodeClaim by `metadata.uid`, recorded when the workflow started;
- its Node by `spec.providerID` (the claim's instance) and, once registered, `metadata.uid`.

An object with the same name and another identity is "not mine": it is never labelled, tainted, drained,
finalized or deleted. Every patch goes through `kubeops.update`, which carries the resourceVersion of the
object whose identity was checked (a same-named object created since is a conflict, never a write), and
every delete carries a `uid` precondition. `tests/unit/activities/test_ownership.py` checks that no
activity writes a Node or NodeClaim any other way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from apis.meta import rfc3339
from kube import ops as kubeops
from kube import resources as r
from kube.errors import ConflictError, NotFoundError
from kube.resources import Resource
from kube.types import Kube, Obj
from scheduling.disruption.candidates import parse_time


@dataclass(frozen=True)
class Owned:
    """The identity of one object a claim owns. Empty fields are not yet known and not checked (a Node's
    uid before registration); `name` is always set."""

    resource: Resource
    name: str
    uid: str = ""
    provider_id: str = ""

    def mismatch(self, obj: Obj) -> str:
        """Why `obj` (an object named `self.name`) is not this one; '' when it is."""
        meta = obj.get("metadata") or {}
        if self.uid and meta.get("uid") != self.uid:
            return f"{self.resource.kind} {self.name} has uid {meta.get('uid')}, not {self.uid}"
        if self.provider_id:
            found = _provider_id(self.resource, obj)
            if found and found != self.provider_id:
                return f"{self.resource.kind} {self.name} has providerID {found}, not {self.provider_id}"
            if not found and self.resource is r.NODE:
                return f"Node {self.name} has no providerID, not {self.provider_id}"
        return ""

    def describe(self) -> str:
        ids = ", ".join(f"{k} {v}" for k, v in (("uid", self.uid), ("providerID", self.provider_id)) if v)
        return f"{self.resource.kind} {self.name}" + (f" ({ids})" if ids else "")


def _provider_id(resource: Resource, obj: Obj) -> str:
    if resource is r.NODE:
        return str((obj.get("spec") or {}).get("providerID") or "")
    return str((obj.get("status") or {}).get("providerID") or "")


def node_claim(name: str, uid: str) -> Owned:
    return Owned(r.NODECLAIM, name, uid=uid)


def node(name: str, provider_id: str, uid: str = "") -> Owned:
    return Owned(r.NODE, name, uid=uid, provider_id=provider_id)


def get(kube: Kube, owned: Owned) -> Obj | None:
    """The object, or None when it is gone or is not the one `owned` identifies."""
    obj = kubeops.get_or_none(kube, owned.resource, owned.name)
    if obj is None or owned.mismatch(obj):
        return None
    return obj


def update(kube: Kube, owned: Owned, mutate: Callable[[Obj], bool], subresource: str | None = None) -> Obj | None:
    """`kubeops.update` of the object `owned` identifies: `mutate` sees it only when its identity matches
    (the patch carries the resourceVersion of the object checked). None when it is gone or not ours."""
    mine = True

    def checked(obj: Obj) -> bool:
        nonlocal mine
        mine = not owned.mismatch(obj)
        return mutate(obj) if mine else False

    result = kubeops.update(kube, owned.resource, owned.name, checked, subresource=subresource)
    return result if mine else None


def delete(kube: Kube, owned: Owned) -> bool:
    """Delete the object `owned` identifies, with a `uid` precondition (its recorded uid, or the uid of the
    object read and checked when none is recorded). False when it is gone or not ours."""
    uid = owned.uid
    if not uid:
        obj = get(kube, owned)
        if obj is None:
            return False
        uid = obj["metadata"].get("uid", "")
    try:
        kube.delete(owned.resource, owned.name, preconditions={"uid": uid})
    except (NotFoundError, ConflictError):
        return False
    return True


def remove_finalizer(kube: Kube, owned: Owned, finalizer: str) -> None:
    """Remove one finalizer from the object `owned` identifies (no-op when absent, gone or not ours)."""
    with contextlib.suppress(NotFoundError):
        update(kube, owned, kubeops.dropping_finalizer(finalizer))


def stamp_last_pod_event(kube: Kube, owned: Owned, when: datetime, dedupe: timedelta) -> bool:
    """Set the NodeClaim's `status.lastPodEventTime` to `when` (RFC 3339, to the second) unless the time
    it holds is already later than `when - dedupe`: the stamp never moves backwards, and within `dedupe`
    of the last one it is not rewritten (Karpenter dedupes these writes by 10 s, less than the 15 s
    validation of a consolidation command, so a command decided meanwhile is still invalidated). True
    when it wrote.

    A status-only write of one timestamp, yet guarded by the claim's uid like every other write: node
    names repeat, so the claim found by a node's name must be the one stamped, not a same-named claim
    created since (whose consolidation a stray stamp would delay)."""

    wrote = False

    def mutate(obj: Obj) -> bool:
        nonlocal wrote
        status = obj.setdefault("status", {})
        stored = parse_time(status.get("lastPodEventTime"))
        wrote = stored is None or stored <= when - dedupe
        if wrote:
            status["lastPodEventTime"] = rfc3339(when)
        return wrote

    return update(kube, owned, mutate, subresource="status") is not None and wrote
