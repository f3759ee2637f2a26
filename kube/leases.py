"""`coordination.k8s.io/v1` Leases as leader-election records, read and written with optimistic
concurrency.

`LeaseRecord` is the part of a Lease's spec leader election uses; `LeaseClient` reads it with the
object's resourceVersion and writes it back only if that version is still current (a Lease changed
meanwhile gives `kube.errors.ConflictError`, a Lease created meanwhile `AlreadyExistsError`), so two
candidates can never both believe their write won. Synchronous, like the `Kube` client it wraps.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from apis.meta import parse_rfc3339
from kube import resources as r
from kube.errors import NotFoundError
from kube.types import Kube, Obj

MICRO_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"  # the API's MicroTime: RFC 3339 with microseconds, in UTC


@dataclass(frozen=True)
class LeaseRecord:
    """Who holds the lease and until when, as the Lease's spec says. An empty `holder` is a released
    lease (anyone may take it)."""

    holder: str
    lease_duration_seconds: int
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    transitions: int = 0

    def spec(self) -> Obj:
        """The Lease spec carrying this record."""
        spec: Obj = {"holderIdentity": self.holder, "leaseDurationSeconds": self.lease_duration_seconds,
                     "leaseTransitions": self.transitions}  # fmt: skip
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        return spec

    @classmethod
    def from_spec(cls, spec: Obj | None) -> LeaseRecord:
        """The record in a Lease spec; missing fields read as empty (a Lease created by hand)."""
        spec = spec or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=parse_micro_time(spec.get("acquireTime")),
            renew_time=parse_micro_time(spec.get("renewTime")),
            transitions=int(spec.get("leaseTransitions") or 0),
        )


def format_micro_time(when: datetime) -> str:
    return when.astimezone(UTC).strftime(MICRO_TIME)


def parse_micro_time(text: object) -> datetime | None:
    """A MicroTime or Time string as an aware datetime; None when absent or unreadable."""
    return parse_rfc3339(text)


@dataclass(frozen=True)
class StoredLease:
    """A record as read, with the resourceVersion a write must name."""

    record: LeaseRecord
    resource_version: str


class LeaseClient:
    """One named Lease in one namespace. Every method raises `kube.errors` as the client does."""

    def __init__(self, kube: Kube, namespace: str, name: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name

    def read(self) -> StoredLease | None:
        """The Lease's record, or None when there is no such Lease."""
        try:
            obj = self.kube.get(r.LEASE, self.name, self.namespace)
        except NotFoundError:
            return None
        return _stored(obj)

    def create(self, record: LeaseRecord) -> StoredLease:
        """Create the Lease with `record`; AlreadyExistsError when another candidate created it first."""
        body = {"metadata": {"name": self.name, "namespace": self.namespace}, "spec": record.spec()}
        return _stored(self.kube.create(r.LEASE, body, self.namespace))

    def update(self, record: LeaseRecord, resource_version: str) -> StoredLease:
        """Replace the record if the Lease is still at `resource_version`; ConflictError otherwise."""
        body = {
            "metadata": {"name": self.name, "namespace": self.namespace, "resourceVersion": resource_version},
            "spec": record.spec(),
        }
        return _stored(self.kube.replace(r.LEASE, body))


def _stored(obj: Obj) -> StoredLease:
    meta = obj.get("metadata") or {}
    return StoredLease(LeaseRecord.from_spec(obj.get("spec")), str(meta.get("resourceVersion") or ""))
