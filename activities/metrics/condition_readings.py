"""Karpenter's status-condition metrics (`operator_<kind>_status_condition_*`, activities.metrics.registry
.ConditionMetrics) of NodeClaims, NodePools, Nodes and EC2NodeClasses, from the objects the leader's
cluster-state refresh reads (activities.metrics.cluster_refresh). Pure.

Each refresh sets, per object and condition, `_count` (1, labelled with its status and reason) and
`_current_status_seconds` (since its `lastTransitionTime`). A condition whose status differs from the one
the previous refresh read counts one transition in `_transitions_total` (labelled with the status it left
and that status's reason) and observes in `_transition_seconds` how long the status it left had held
(between the two `lastTransitionTime`s). Transitions are seen at the refresh's pace: a status that flips
and flips back between two reads is not seen, and a new leader counts only what changes after its first
read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from activities.metrics.labels import seconds_since
from kube.types import Obj

Key = tuple[str, str, str]  # (namespace, name, condition type)


@dataclass(frozen=True)
class Reading:
    """A condition as one read saw it."""

    status: str
    reason: str
    since: str  # lastTransitionTime, '' when the condition has none


@dataclass(frozen=True)
class Transition:
    """A condition's status changed between two reads: from `status` (with `reason`) to `to_status`, which
    it had held for `held` seconds (None when a time is missing)."""

    type: str
    status: str
    reason: str
    to_status: str
    held: float | None


def read_conditions(objects: Iterable[Obj]) -> dict[Key, Reading]:
    """Every status condition of these objects, by (namespace, name, type); namespace '' for a
    cluster-scoped object."""
    out: dict[Key, Reading] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if not cond.get("type"):
                continue
            reading = Reading(str(cond.get("status") or ""), str(cond.get("reason") or ""),
                              str(cond.get("lastTransitionTime") or ""))  # fmt: skip
            out[(namespace, name, str(cond["type"]))] = reading
    return out


def condition_gauges(
    readings: dict[Key, Reading], now: datetime
) -> tuple[dict[tuple[str, ...], float], dict[tuple[str, ...], float]]:
    """(`_count`, `_current_status_seconds`) by (namespace, name, type, status, reason); a condition with
    no transition time has no current-status series."""
    count: dict[tuple[str, ...], float] = {}
    current: dict[tuple[str, ...], float] = {}
    for (namespace, name, type_), reading in readings.items():
        key = (namespace, name, type_, reading.status, reading.reason)
        count[key] = 1.0
        held = seconds_since(reading.since, now)
        if held is not None:
            current[key] = held
    return count, current


def transitions(before: dict[Key, Reading], after: dict[Key, Reading], now: datetime) -> list[Transition]:
    """The conditions read in both `before` and `after` whose status changed."""
    out: list[Transition] = []
    for key, new in after.items():
        old = before.get(key)
        if old is None or old.status == new.status:
            continue
        started, ended = seconds_since(old.since, now), seconds_since(new.since, now)
        held = max(0.0, started - ended) if started is not None and ended is not None else None
        out.append(Transition(key[2], old.status, old.reason, new.status, held))
    return out
