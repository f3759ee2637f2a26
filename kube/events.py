"""`EventRecorder`: core/v1 Events about the objects nodeflow manages (`kubectl describe` shows them).

An event is named deterministically, `<object name>.<hash of kind, uid, reason and message>`, so a repeat
of the same event bumps `count` and `lastTimestamp` of one Event instead of creating another, the way
client-go's event correlator aggregates. Recording is best effort: a failure is logged, never raised,
so an event can never fail the operation it describes.
"""

from __future__ import annotations

import hashlib
import logging
import socket
from collections.abc import Callable
from datetime import UTC, datetime

from kube.errors import AlreadyExistsError, KubeError, NotFoundError
from kube.resources import EVENT
from kube.types import Kube, Obj

log = logging.getLogger(__name__)

EVENT_TYPES = ("Normal", "Warning")
DEFAULT_NAMESPACE = "default"  # where events about cluster-scoped objects go
MAX_MESSAGE = 1024
_MAX_NAME = 253
_HASH_CHARS = 16


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_name(involved: Obj, reason: str, message: str) -> str:
    """`<object name>.<16 hex digits>`, stable for the same object (kind and uid), reason and message."""
    meta = involved.get("metadata") or {}
    key = "\x00".join((str(involved.get("kind", "")), str(meta.get("uid", "")), reason, message))
    digest = hashlib.sha256(key.encode()).hexdigest()[:_HASH_CHARS]
    prefix = str(meta.get("name", "unnamed"))[: _MAX_NAME - _HASH_CHARS - 1]
    return f"{prefix}.{digest}"


def involved_reference(involved: Obj) -> Obj:
    """The involvedObject reference: kind, apiVersion, name, uid, and namespace when namespaced."""
    meta = involved.get("metadata") or {}
    ref: Obj = {
        "kind": involved.get("kind", ""),
        "apiVersion": involved.get("apiVersion", ""),
        "name": meta.get("name", ""),
    }
    for field in ("namespace", "uid", "resourceVersion"):
        if meta.get(field):
            ref[field] = meta[field]
    return ref


class EventRecorder:
    """Records Events through `kube`; see the module docstring. Safe to share between threads."""

    def __init__(self, kube: Kube, component: str = "nodeflow", *, clock: Callable[[], str] = _utc_now) -> None:
        self._kube = kube
        self._component = component
        self._instance = socket.gethostname()
        self._clock = clock

    def record(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        """Create the Event, or bump the count of the identical one. Never raises."""
        if event_type not in EVENT_TYPES:
            log.error("event %r on %s not recorded: type %r is not Normal or Warning", reason,
                      (involved.get("metadata") or {}).get("name"), event_type)  # fmt: skip
            return
        message = message[:MAX_MESSAGE]
        name = event_name(involved, reason, message)
        namespace = (involved.get("metadata") or {}).get("namespace") or DEFAULT_NAMESPACE
        try:
            self._create_or_bump(name, namespace, involved, event_type, reason, message)
        except KubeError as exc:
            log.warning("event %s/%s (%s) not recorded: %s", namespace, name, reason, exc)

    def _create_or_bump(
        self, name: str, namespace: str, involved: Obj, event_type: str, reason: str, message: str
    ) -> None:
        now = self._clock()
        event = {
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved_reference(involved),
            "type": event_type,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "reportingInstance": self._instance,
        }
        try:
            self._kube.create(EVENT, event, namespace)
            return
        except AlreadyExistsError:
            pass
        try:
            existing = self._kube.get(EVENT, name, namespace)
        except NotFoundError:  # deleted (or expired) in between: start over
            self._kube.create(EVENT, event, namespace)
            return
        count = int(existing.get("count") or 1) + 1
        self._kube.patch(EVENT, name, {"count": count, "lastTimestamp": now}, namespace)
