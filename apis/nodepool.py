"""NodePool (karpenter.sh/v1): what nodes may be launched, with which constraints and limits."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field

from apis.base import KubeModel
from apis.duration import validate_duration
from apis.meta import Condition, ObjectMeta
from apis.quantity import Quantity
from apis.requirements import NodeSelectorRequirement, Taint

Duration = Annotated[str, AfterValidator(validate_duration)]
FiniteDuration = Annotated[str, AfterValidator(lambda v: validate_duration(v, allow_never=False))]

API_VERSION: Final = "karpenter.sh/v1"


class NodeClassReference(KubeModel):
    group: str
    kind: str
    name: str


class NodeClaimTemplateMetadata(KubeModel):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class NodeClaimTemplateSpec(KubeModel):
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list)
    node_class_ref: NodeClassReference
    taints: list[Taint] = Field(default_factory=list)
    startup_taints: list[Taint] = Field(default_factory=list)
    expire_after: Duration = "720h"
    termination_grace_period: FiniteDuration | None = None


class NodeClaimTemplate(KubeModel):
    metadata: NodeClaimTemplateMetadata = Field(default_factory=NodeClaimTemplateMetadata)
    spec: NodeClaimTemplateSpec


class Budget(KubeModel):
    nodes: str = "10%"
    schedule: str | None = None
    duration: str | None = None
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = None


class Disruption(KubeModel):
    consolidate_after: Duration = "0s"
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = "WhenEmptyOrUnderutilized"
    budgets: list[Budget] = Field(default_factory=lambda: [Budget()])


class NodePoolSpec(KubeModel):
    template: NodeClaimTemplate
    disruption: Disruption = Field(default_factory=Disruption)
    limits: dict[str, Quantity] = Field(default_factory=dict)
    weight: int | None = Field(default=None, ge=1, le=100)
    replicas: int | None = Field(default=None, ge=0)


class NodePoolStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=list)
    resources: dict[str, str] = Field(default_factory=dict)
    nodes: int = 0
    node_class_observed_generation: int | None = None


class NodePool(KubeModel):
    api_version: Literal["karpenter.sh/v1"] = API_VERSION
    kind: Literal["NodePool"] = "NodePool"
    metadata: ObjectMeta
    spec: NodePoolSpec
    status: NodePoolStatus = Field(default_factory=NodePoolStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    def template_hash(self) -> str:
        """A stable hash of the NodeClaim template (labels, annotations, taints, startup taints, expiry,
        grace period, node class): nodes launched from another hash have drifted. Requirements are
        excluded, as in Karpenter (their drift is judged against the node's labels instead)."""
        spec = self.spec.template.spec
        doc = {
            "metadata": self.spec.template.metadata.to_kube(),
            "taints": [t.to_kube() for t in spec.taints],
            "startupTaints": [t.to_kube() for t in spec.startup_taints],
            "expireAfter": spec.expire_after,
            "terminationGracePeriod": spec.termination_grace_period,
            "nodeClassRef": spec.node_class_ref.to_kube(),
        }
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
        return str(int(digest[:15], 16))
