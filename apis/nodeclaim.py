"""NodeClaim (karpenter.sh/v1): one requested node, and what became of it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from apis.base import KubeModel
from apis.meta import Condition, ObjectMeta, is_true
from apis.nodepool import Duration, FiniteDuration, NodeClassReference
from apis.quantity import Quantity
from apis.requirements import NodeSelectorRequirement, Taint

# Condition types (Karpenter's vocabulary).
LAUNCHED = "Launched"
REGISTERED = "Registered"
INITIALIZED = "Initialized"
DRIFTED = "Drifted"
EXPIRED = "Expired"
DRAINED = "Drained"
INSTANCE_TERMINATING = "InstanceTerminating"
READY = "Ready"


class ResourceRequirements(KubeModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)


class NodeClaimSpec(KubeModel):
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    node_class_ref: NodeClassReference
    taints: list[Taint] = Field(default_factory=list)
    startup_taints: list[Taint] = Field(default_factory=list)
    expire_after: Duration = "720h"
    termination_grace_period: FiniteDuration | None = None


class NodeClaimStatus(KubeModel):
    provider_id: str | None = Field(default=None, alias="providerID")
    image_id: str | None = Field(default=None, alias="imageID")
    node_name: str | None = None
    capacity: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)
    last_pod_event_time: str | None = None


class NodeClaim(KubeModel):
    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodeClaim"] = "NodeClaim"
    metadata: ObjectMeta
    spec: NodeClaimSpec
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    def condition_true(self, type_: str) -> bool:
        return is_true(self.status.conditions, type_)
