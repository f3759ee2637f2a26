"""Taints and tolerations, as the kube-scheduler matches them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apis.labels import UNREGISTERED_TAINT_KEY


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


# Taints a node carries only while it starts; the simulation assumes they go away, and a node is not
# Initialized while it has one (Karpenter's known ephemeral taints).
EPHEMERAL_TAINT_KEYS: frozenset[str] = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized",
        UNREGISTERED_TAINT_KEY,
    }
)
# The Node Readiness Controller's taints (a NodeReadinessRule's `readiness.k8s.io/...` key), held until a
# node condition says the node is ready for workloads; ephemeral too, as Karpenter treats them since v1.13.
READINESS_TAINT_PREFIX = "readiness.k8s.io/"


def is_ephemeral_taint(key: str) -> bool:
    """Whether a taint with this key is one a starting node is expected to lose (see above)."""
    return key in EPHEMERAL_TAINT_KEYS or key.startswith(READINESS_TAINT_PREFIX)


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
