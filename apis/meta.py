"""ObjectMeta and status Conditions, shared by every kind."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from apis.base import KubeModel, OpenKubeModel


class OwnerReference(OpenKubeModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(OpenKubeModel):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    finalizers: list[str] = Field(default_factory=list)
    owner_references: list[OwnerReference] = Field(default_factory=list)


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(KubeModel):
    """A status condition (metav1.Condition)."""

    type: str
    status: ConditionStatus
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""
    observed_generation: int | None = None


def get_condition(conditions: list[Condition], type_: str) -> Condition | None:
    """The condition of that type, or None."""
    return next((c for c in conditions if c.type == type_), None)


def is_true(conditions: list[Condition], type_: str) -> bool:
    cond = get_condition(conditions, type_)
    return cond is not None and cond.status == "True"


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: str,
    observed_generation: int | None = None,
) -> list[Condition]:
    """A new list with the condition set. lastTransitionTime changes only when the status changes.

    The order of existing conditions is kept; a new type is appended.
    """
    out: list[Condition] = []
    found = False
    for cond in conditions:
        if cond.type != type_:
            out.append(cond)
            continue
        found = True
        transition = now if cond.status != status else (cond.last_transition_time or now)
        out.append(
            Condition(
                type=type_,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=transition,
                observed_generation=observed_generation,
            )
        )
    if not found:
        out.append(
            Condition(
                type=type_,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=now,
                observed_generation=observed_generation,
            )
        )
    return out


READY = "Ready"
AWAITING_RECONCILIATION = ("AwaitingReconciliation", "object is awaiting reconciliation")


def with_root_condition(
    conditions: list[Condition], dependents: Sequence[str], now: str, root: str = READY
) -> list[Condition]:
    """The conditions with Karpenter's root condition over `dependents`, as its status library
    (awslabs/operatorpkg) keeps it: a dependent not set yet is set Unknown (AwaitingReconciliation, as
    Karpenter sets every dependent of a new object); then `root` is True (reason `root`) when every
    dependent is True; else False with reason UnhealthyDependents when one is False, else Unknown with
    reason ReconcilingDependents, the message listing each dependent not True, the latest changed first
    ("Initialized=Unknown, Registered=Unknown"). Like set_condition, lastTransitionTime changes only with
    the status."""
    out = list(conditions)
    for type_ in dependents:
        if get_condition(out, type_) is None:
            out = set_condition(out, type_, "Unknown", *AWAITING_RECONCILIATION, now)
    unhealthy = [c for c in out if c.type in dependents and c.status != "True"]
    if not unhealthy:
        return set_condition(out, root, "True", root, "", now)
    unhealthy.sort(key=lambda c: c.last_transition_time, reverse=True)  # stable: ties keep their order
    status: ConditionStatus = "False" if any(c.status == "False" for c in unhealthy) else "Unknown"
    reason = "UnhealthyDependents" if status == "False" else "ReconcilingDependents"
    return set_condition(out, root, status, reason, ", ".join(f"{c.type}={c.status}" for c in unhealthy), now)


def as_utc(moment: datetime) -> datetime:
    """The moment as a timezone-aware UTC datetime (a naive one is taken to be UTC already)."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_rfc3339(text: object) -> datetime | None:
    """An RFC 3339 timestamp as Kubernetes (and EC2) write them, `Z` or an offset, any precision, as an
    aware UTC-based datetime (a naive one is taken to be UTC); None when absent, not text or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


def rfc3339(moment: datetime) -> str:
    """RFC3339 in UTC to the second, as Kubernetes writes timestamps."""
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    """The current time as Kubernetes writes timestamps (condition lastTransitionTime, annotations)."""
    return rfc3339(datetime.now(UTC))
