"""Node selector requirements and taints, as Karpenter v1 writes them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from apis.base import KubeModel

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeSelectorRequirement(KubeModel):
    """`{key, operator, values, minValues}`. minValues asks for at least that many distinct values
    (e.g. instance types) to stay possible after scheduling, for flexibility at launch."""

    key: str
    operator: Operator
    values: list[str] = Field(default_factory=list)
    min_values: int | None = Field(default=None, ge=1, le=50)


class Taint(KubeModel):
    key: str
    value: str | None = None
    effect: TaintEffect
    time_added: str | None = None

    def matches(self, other: Taint) -> bool:
        """Same key and effect (the identity of a taint on a node)."""
        return self.key == other.key and self.effect == other.effect
