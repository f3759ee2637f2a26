"""Taints and tolerations, as the kube-scheduler matches them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TaintSpec:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: TaintSpec) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


# Taints a node carries only while it starts; the simulation assumes they go away.
EPHEMERAL_TAINT_KEYS: frozenset[str] = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized",
        "karpenter.sh/unregistered",
    }
)


def parse_taints(taints: Iterable[Mapping[str, Any]]) -> tuple[TaintSpec, ...]:
    return tuple(TaintSpec(str(t["key"]), str(t.get("value") or ""), str(t["effect"])) for t in taints)


def parse_tolerations(tolerations: Iterable[Mapping[str, Any]]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            str(t.get("key") or ""),
            str(t.get("operator") or "Equal"),
            str(t.get("value") or ""),
            str(t.get("effect") or ""),
        )
        for t in tolerations
    )


def untolerated(
    taints: Iterable[TaintSpec], tolerations: tuple[Toleration, ...], prefer_no_schedule: bool
) -> TaintSpec | None:
    """The first taint the tolerations do not cover. PreferNoSchedule taints count only when
    `prefer_no_schedule` is true (before the pod's preferences are relaxed)."""
    for taint in taints:
        if taint.effect == "PreferNoSchedule" and not prefer_no_schedule:
            continue
        if not any(tol.tolerates(taint) for tol in tolerations):
            return taint
    return None
