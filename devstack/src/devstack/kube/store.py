"""The object store behind the emulator: objects, one global resourceVersion, watch history.

Every method is synchronous and is only called from the server's event loop, so each write is
atomic with respect to every other request and controller without locks. Stored objects are
never mutated after they are stored (writes store a new dict), so lists, watch events and
responses may share them safely.

Writes bump one global resourceVersion, append an event to the resource's bounded history
(used to serve ``watch`` from a resourceVersion, and 410 Gone once it was compacted away), and
notify subscribers (watch streams) and listeners (the in-process controllers).

Structural defaults: storing a ``CustomResourceDefinition`` records the schema of each of its
versions (deleting it forgets them), and every create and update of an object whose resource has
a recorded schema is defaulted from it (see :mod:`devstack.kube.defaulting`) before the
bookkeeping: the request body, and the stored object it replaces (as kube-apiserver defaults
objects read from etcd), so the result is the object with its defaults. A status write takes only
``.status`` from its body, so only status defaults come from it. Objects stored before their CRD
get the defaults on their next write (a real server also defaults them when read).

Validation rules: the same schemas' ``x-kubernetes-validations`` (CEL) are then evaluated on the
defaulted object, with the stored one as ``oldSelf`` on update (see :mod:`devstack.kube.validation`);
an object that breaks one is refused with 422 Invalid naming each field and rule message, and nothing
is stored.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import datetime
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from devstack.kube import bookkeeping, errors
from devstack.kube.catalog import CRD, SERVED, ServedResource
from devstack.kube.cel import ABSENT
from devstack.kube.defaulting import Schema, apply_defaults, crd_schemas
from devstack.kube.selectors import Predicate
from devstack.kube.validation import violations

Key = tuple[str | None, str]  # (namespace or None, name)
Clock = Callable[[], datetime.datetime]


@dataclass
class WatchEvent:
    """One change. ``old`` is the previous version for MODIFIED/DELETED (used to re-filter)."""

    type: str
    obj: dict[str, Any]
    rv: int
    old: dict[str, Any] | None = None
    _encoded: dict[str, bytes] = field(default_factory=dict, repr=False)

    def encode(self, as_type: str | None = None) -> bytes:
        """The JSON line sent on a watch stream, encoded once per type and shared by all watchers."""
        kind = as_type or self.type
        if kind not in self._encoded:
            self._encoded[kind] = json.dumps({"type": kind, "object": self.obj}).encode() + b"\n"
        return self._encoded[kind]


@dataclass
class Subscription:
    """A live watch: events of one resource arrive on ``queue``; ``None`` means the stream must end."""

    resource: ServedResource
    queue: asyncio.Queue[WatchEvent | None] = field(default_factory=asyncio.Queue)


Listener = Callable[[ServedResource, WatchEvent], None]


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class ObjectStore:
    """In-memory objects of every served resource; see the module docstring for the contract."""

    # Called with (resource, new object, stored object or None) before a create or update is committed;
    # raises ApiError to refuse it (the emulator's admission plugins, devstack.kube.access).
    admission: Callable[[ServedResource, dict[str, Any], dict[str, Any] | None], None] | None = None

    def __init__(self, clock: Clock = _utcnow, history_limit: int = 10_000) -> None:
        self._clock = clock
        self._rv = 0
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {r.key: {} for r in SERVED}
        self._history: dict[str, collections.deque[WatchEvent]] = {
            r.key: collections.deque(maxlen=history_limit) for r in SERVED
        }
        self._compacted: dict[str, int] = {r.key: 0 for r in SERVED}
        self._subscriptions: dict[str, list[Subscription]] = {r.key: [] for r in SERVED}
        self._listeners: list[Listener] = []
        self._schemas: dict[str, dict[str, Schema]] = {}  # CRD name -> resource key -> openAPIV3Schema

    # ----- reading

    @property
    def resource_version(self) -> int:
        return self._rv

    def now(self) -> datetime.datetime:
        return self._clock()

    def get(self, res: ServedResource, namespace: str | None, name: str) -> dict[str, Any]:
        """The stored object; raises ``ApiError`` 404 NotFound."""
        obj = self._objects[res.key].get((namespace if res.namespaced else None, name))
        if obj is None:
            raise errors.not_found(res, name)
        return obj

    def find(self, res: ServedResource, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._objects[res.key].get((namespace if res.namespaced else None, name))

    def list(
        self, res: ServedResource, namespace: str | None = None, predicate: Predicate | None = None
    ) -> list[dict[str, Any]]:
        """Objects in (namespace, name) order; ``namespace=None`` means all namespaces."""
        objs = self._objects[res.key]
        keys = sorted(k for k in objs if namespace is None or k[0] == namespace)
        return [objs[k] for k in keys if predicate is None or predicate(objs[k])]

    def schema(self, res: ServedResource) -> Schema | None:
        """The ``openAPIV3Schema`` a stored CRD declares for ``res`` (None: no CRD, no defaulting)."""
        for by_key in self._schemas.values():
            if res.key in by_key:
                return by_key[res.key]
        return None

    def iter_all(self, res: ServedResource) -> Iterator[dict[str, Any]]:
        """Every object of a resource, unordered (for in-process indexes, not for output)."""
        return iter(list(self._objects[res.key].values()))

    # ----- writing

    def create(self, res: ServedResource, namespace: str | None, body: Any) -> dict[str, Any]:
        """Store a new object; 409 AlreadyExists, 404 when its namespace does not exist."""
        schema = self.schema(res)
        new = bookkeeping.prepare_create(res, apply_defaults(schema, body), namespace, self._clock(), self._rv + 1)
        new = apply_defaults(schema, new)
        key = self._key(res, new)
        self._validate(res, key[1], schema, new)
        if res.namespaced and not self._objects["v1/namespaces"].get((None, key[0] or "")):
            raise errors.ApiError(
                404, "NotFound", f'namespaces "{key[0]}" not found', {"name": key[0], "kind": "namespaces"}
            )
        if key in self._objects[res.key]:
            raise errors.already_exists(res, key[1])
        if self.admission is not None:
            self.admission(res, new, None)
        self._commit(res, "ADDED", new, None)
        return new

    def update(
        self,
        res: ServedResource,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str | None = None,
        expected_rv: str | None = None,
    ) -> dict[str, Any]:
        """Replace an object (or its status); 409 Conflict when ``expected_rv`` is stale.

        A no-op write returns the stored object unchanged (no new resourceVersion, no event).
        Clearing the last finalizer of an object being deleted removes it (DELETED).
        """
        old = self.get(res, namespace, name)
        if expected_rv and expected_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(res, name)
        schema = self.schema(res)
        current = apply_defaults(schema, old)
        new = bookkeeping.prepare_update(res, current, apply_defaults(schema, body), subresource, self._rv + 1)
        if bookkeeping.same_content(old, new):
            return old
        self._validate(res, name, schema, new, current)
        if self.admission is not None:
            self.admission(res, new, old)
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            self._commit(res, "DELETED", new, old)
        else:
            self._commit(res, "MODIFIED", new, old)
        return new

    def delete(
        self,
        res: ServedResource,
        namespace: str | None,
        name: str,
        preconditions: dict[str, Any] | None = None,
        grace_period_seconds: int = 0,
    ) -> dict[str, Any]:
        """Delete now, or mark ``deletionTimestamp`` when finalizers remain (MODIFIED, new rv).

        Returns the object as last stored. Deleting an object already being deleted changes
        nothing. ``preconditions`` ({uid, resourceVersion}) that do not match give 409 Conflict.
        """
        old = self.get(res, namespace, name)
        meta = old["metadata"]
        for field_name in ("uid", "resourceVersion"):
            wanted = (preconditions or {}).get(field_name)
            if wanted and wanted != meta.get(field_name):
                raise errors.conflict(
                    res,
                    name,
                    f"Precondition failed: {field_name}: {wanted}, ObjectMeta.{field_name}: {meta.get(field_name)}",
                )
        if meta.get("deletionTimestamp"):
            return old
        new = {**old, "metadata": {**meta, "resourceVersion": str(self._rv + 1)}}
        if meta.get("finalizers"):
            new["metadata"]["deletionTimestamp"] = bookkeeping.timestamp(self._clock())
            new["metadata"]["deletionGracePeriodSeconds"] = grace_period_seconds
            self._commit(res, "MODIFIED", new, old)
        else:
            self._commit(res, "DELETED", new, old)
        return new

    # ----- watching

    def subscribe(self, res: ServedResource, since: int | None) -> tuple[builtins.list[WatchEvent], Subscription]:
        """Replay events newer than ``since`` (None: synthetic ADDED for every object) and subscribe.

        Raises 410 Gone when events after ``since`` were already compacted from the history.
        """
        if since is None:
            backlog = [WatchEvent("ADDED", o, int(o["metadata"]["resourceVersion"])) for o in self.list(res)]
        else:
            if since < self._compacted[res.key]:
                raise errors.gone(since, self._compacted[res.key])
            backlog = [e for e in self._history[res.key] if e.rv > since]
        sub = Subscription(res)
        self._subscriptions[res.key].append(sub)
        return backlog, sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._subscriptions[sub.resource.key]
        if sub in subs:
            subs.remove(sub)

    def close_watches(self, res: ServedResource | None = None) -> int:
        """End live watch streams (all, or of one resource) as a dropped connection would; returns how many."""
        count = 0
        for key, subs in self._subscriptions.items():
            if res is None or key == res.key:
                for sub in subs:
                    sub.queue.put_nowait(None)
                    count += 1
        return count

    def watch_count(self, res: ServedResource | None = None) -> int:
        return sum(len(s) for k, s in self._subscriptions.items() if res is None or k == res.key)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(resource, event)`` synchronously after every write (it must not block)."""
        self._listeners.append(listener)

    # ----- internals

    @staticmethod
    def _key(res: ServedResource, obj: dict[str, Any]) -> Key:
        meta = obj["metadata"]
        return (meta.get("namespace") if res.namespaced else None, meta["name"])

    @staticmethod
    def _validate(
        res: ServedResource, name: str, schema: Schema | None, new: dict[str, Any], old: Any = ABSENT
    ) -> None:
        """Raise 422 Invalid when `new` breaks a validation rule of `schema` (`old`: the stored object)."""
        failed = violations(schema, new, old)
        if failed:
            raise errors.invalid_fields(res, name, [(v.field, v.detail()) for v in failed])

    def _record_schemas(self, kind: str, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        if kind == "DELETED":
            self._schemas.pop(name, None)
        else:
            self._schemas[name] = crd_schemas(crd)

    def _commit(self, res: ServedResource, kind: str, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        self._rv += 1
        key = self._key(res, new)
        if kind == "DELETED":
            self._objects[res.key].pop(key, None)
        else:
            self._objects[res.key][key] = new
        if res.key == CRD.key:
            self._record_schemas(kind, new)
        history = self._history[res.key]
        if len(history) == history.maxlen:
            self._compacted[res.key] = history[0].rv
        event = WatchEvent(kind, new, self._rv, old)
        history.append(event)
        for sub in self._subscriptions[res.key]:
            sub.queue.put_nowait(event)
        for listener in self._listeners:
            listener(res, event)
