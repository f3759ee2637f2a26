"""An in-memory stand-in for the Kube boundary, just enough for the NodeClaim activities: get, list (with a
spec.nodeName field selector), create, merge patch with resourceVersion checks, delete with finalizers,
and evict (PodDisruptionBudget refusals by pod name).

Every Node and NodeClaim write an activity makes must prove it is writing the object it checked: a patch
carries the resourceVersion it read, a delete carries a `uid` precondition (activities.nodeclaim.ownership). MemKube
raises UnguardedWrite otherwise, so every activity test also checks that rule."""

from __future__ import annotations

import builtins
import contextlib
import copy
import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from kube.errors import AlreadyExistsError, ConflictError, NotFoundError, TooManyRequestsError
from kube.resources import NODE, NODECLAIM, POD, Resource
from kube.watch_cache import WATCHED, WatchCache

Obj = dict[str, Any]
GUARDED = (NODE.plural, NODECLAIM.plural)
_uids = itertools.count(1)


class UnguardedWrite(AssertionError):
    """A Node or NodeClaim was written without a resourceVersion or uid precondition."""


def merge(target: Obj, patch: Obj) -> Obj:
    """RFC 7386 JSON merge patch."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class MemKube:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.version = 0
        self.refuse_eviction: set[str] = set()  # pod names a PDB protects
        self.evicted: list[str] = []
        self.deleted: list[str] = []
        self.grace_periods: dict[str, int] = {}  # "Kind/name" -> grace_period_seconds of its delete
        self.guarded = True  # Node and NodeClaim writes must carry a resourceVersion or uid precondition

    @contextlib.contextmanager
    def as_admin(self) -> Iterator[MemKube]:
        """Writes by the test itself (arranging the world), which the ownership rule does not apply to."""
        self.guarded = False
        try:
            yield self
        finally:
            self.guarded = True

    def _key(self, resource: Resource, name: str, namespace: str | None) -> tuple[str, str, str]:
        return (resource.plural, (namespace or "default") if resource.namespaced else "", name)

    def _stamp(self, obj: Obj) -> Obj:
        self.version += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        return obj

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        found = self.objects.get(self._key(resource, name, namespace))
        if found is None:
            raise NotFoundError(f"{resource.kind} {name} not found")
        return copy.deepcopy(found)

    def list(self, resource: Resource, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> list[Obj]:  # fmt: skip
        node = field_selector.removeprefix("spec.nodeName=") if field_selector else None
        wanted = dict(term.split("=", 1) for term in label_selector.split(",")) if label_selector else {}
        out = [
            copy.deepcopy(obj)
            for (plural, ns, _), obj in sorted(self.objects.items())
            if plural == resource.plural and (namespace is None or ns == namespace)
            and (node is None or obj.get("spec", {}).get("nodeName") == node)
            and all((obj["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]  # fmt: skip
        return out

    def list_with_version(self, resource: Resource, namespace: str | None = None, label_selector: str | None = None,
                          field_selector: str | None = None) -> tuple[builtins.list[Obj], str]:  # fmt: skip
        return self.list(resource, namespace, label_selector, field_selector), str(self.version)

    def create(self, resource: Resource, obj: Obj, namespace: str | None = None) -> Obj:
        meta = obj["metadata"]
        key = self._key(resource, meta["name"], namespace or meta.get("namespace"))
        if key in self.objects:
            raise AlreadyExistsError(f"{resource.kind} {meta['name']} already exists")
        stored = self._stamp(copy.deepcopy(obj))
        stored["metadata"].setdefault("uid", f"uid-{next(_uids)}")
        self.objects[key] = stored
        return copy.deepcopy(self.objects[key])

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None,
              patch_type: str = "merge", subresource: str | None = None) -> Obj:  # fmt: skip
        key = self._key(resource, name, namespace)
        current = self.objects.get(key)
        if current is None:
            raise NotFoundError(f"{resource.kind} {name} not found")
        expected = (patch.get("metadata") or {}).get("resourceVersion")
        if self.guarded and resource.plural in GUARDED and expected is None:
            raise UnguardedWrite(f"patch of {resource.kind} {name} without the resourceVersion it read")
        if expected is not None and expected != current["metadata"]["resourceVersion"]:
            raise ConflictError(f"{resource.kind} {name}: stale resourceVersion")
        if subresource == "status":
            patch = {"status": patch.get("status", {})}
        updated = merge(current, patch)
        if updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get("finalizers"):
            del self.objects[key]
            return updated
        self.objects[key] = self._stamp(updated)
        return copy.deepcopy(self.objects[key])

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> None:
        key = self._key(resource, name, namespace)
        current = self.objects.get(key)
        if current is None:
            raise NotFoundError(f"{resource.kind} {name} not found")
        if self.guarded and resource.plural in GUARDED and not (preconditions or {}).get("uid"):
            raise UnguardedWrite(f"delete of {resource.kind} {name} without a uid precondition")
        for field in ("uid", "resourceVersion"):
            wanted = (preconditions or {}).get(field)
            if wanted and wanted != current["metadata"].get(field):
                raise ConflictError(f"{resource.kind} {name}: precondition {field} {wanted} failed")
        self.deleted.append(f"{resource.kind}/{name}")
        if grace_period_seconds is not None:
            self.grace_periods[f"{resource.kind}/{name}"] = grace_period_seconds
        if current["metadata"].get("finalizers"):
            current["metadata"].setdefault("deletionTimestamp", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            self._stamp(current)
        else:
            del self.objects[key]

    def evict(self, namespace: str, name: str) -> None:
        if name in self.refuse_eviction:
            raise TooManyRequestsError(f"Cannot evict pod {name}: it would violate a PodDisruptionBudget")
        self.evicted.append(name)
        self.delete(POD, name, namespace)


def watch_cache_of(kube: MemKube, listed: tuple[Resource, ...] = WATCHED) -> WatchCache:
    """The leader's watch cache as its watches would hold `kube` now, once the watches of `listed` have
    listed (the others have not yet)."""
    cache = WatchCache(WATCHED)
    for resource in listed:
        store = cache.store(resource)
        assert store is not None
        for obj in kube.list(resource):
            store.apply("ADDED", obj)
        store.mark_synced()
    return cache


def count_lists(kube: MemKube) -> list[str]:
    """The plural of every resource `kube` lists from now on, in order."""
    read: list[str] = []
    listing = kube.list

    def counting(resource: Resource, *args: Any, **kwargs: Any) -> Any:
        read.append(resource.plural)
        return listing(resource, *args, **kwargs)

    kube.list = counting  # type: ignore[method-assign]
    return read


class Events:
    """Records (reason, message) of every event."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str]] = []
        self.involved: list[Obj] = []  # the object of each recorded event, in the same order
        self.types: list[str] = []  # and its type (Normal, Warning)

    def record(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        self.recorded.append((reason, message))
        self.involved.append(involved)
        self.types.append(event_type)
