"""NodeClaim (karpenter.sh/v1): one requested node, and what became of it."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field

from apis.base import KubeModel
from apis.cel import CelRule, RuleTable
from apis.labels import restricted_label_reason
from apis.meta import Condition, ObjectMeta, is_true
from apis.nodepool import NODE_CLASS_REF_RULES, Duration, FiniteDuration, NodeClassReference
from apis.requirements import (
    REQUIREMENT_LIST_RULES,
    NodeSelectorRequirement,
    Taint,
    checked_requirement,
    label_key_rules,
)
from apis.values.quantity import Quantity

API_VERSION: Final = "karpenter.sh/v1"
KIND: Final = "NodeClaim"

# Condition types (Karpenter's vocabulary).
LAUNCHED = "Launched"
REGISTERED = "Registered"
INITIALIZED = "Initialized"
DRIFTED = "Drifted"
EXPIRED = "Expired"
DRAINED = "Drained"
INSTANCE_TERMINATING = "InstanceTerminating"
CONSOLIDATABLE = "Consolidatable"
VOLUMES_DETACHED = "VolumesDetached"
CONSISTENT_STATE_FOUND = "ConsistentStateFound"
DISRUPTION_REASON = "DisruptionReason"
# Ready (apis.meta.READY) is the root of these, as in Karpenter: True once all three are
# (apis.meta.with_root_condition).
READY_DEPENDENTS = (LAUNCHED, REGISTERED, INITIALIZED)
# Every condition type above: written by name nowhere else (tests/unit/test_condition_names.py).
CONDITION_TYPES = (
    LAUNCHED,
    REGISTERED,
    INITIALIZED,
    DRIFTED,
    EXPIRED,
    DRAINED,
    INSTANCE_TERMINATING,
    CONSOLIDATABLE,
    VOLUMES_DETACHED,
    CONSISTENT_STATE_FOUND,
    DISRUPTION_REASON,
)

# Condition reasons that are not a type's own name. LAUNCH_FAILED: Launched False when the launch
# activity gave up (also the non-retryable ApplicationError type it raises).
LAUNCH_FAILED = "LaunchFailed"


def _nodeclaim_requirement(requirement: NodeSelectorRequirement) -> NodeSelectorRequirement:
    """`checked_requirement`: NodeClaims may carry karpenter.sh/nodepool, unlike NodePools; the other
    restrictions are the same."""
    return checked_requirement(requirement, restricted_label_reason)


NodeClaimRequirement = Annotated[NodeSelectorRequirement, AfterValidator(_nodeclaim_requirement)]


class ResourceRequirements(KubeModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)


class NodeClaimSpec(KubeModel):
    """What the node must satisfy; immutable once created (Karpenter's CEL `self == oldSelf`)."""

    requirements: list[NodeClaimRequirement] = Field(default_factory=list, max_length=100)
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
    api_version: Literal["karpenter.sh/v1"] = API_VERSION
    kind: Literal["NodeClaim"] = KIND
    metadata: ObjectMeta
    spec: NodeClaimSpec
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    def condition_true(self, type_: str) -> bool:
        return is_true(self.status.conditions, type_)


# The CRD's CEL rules (apis.cel), where Karpenter's NodeClaim CRD attaches them: the spec never changes
# after creation; requirements follow the NodePool's rules, except that karpenter.sh/nodepool is allowed.
CEL_RULES: RuleTable = {
    "spec": (CelRule("self == oldSelf", "spec is immutable"),),
    **{f"spec.nodeClassRef.{name}": rules for name, rules in NODE_CLASS_REF_RULES.items()},
    "spec.requirements": REQUIREMENT_LIST_RULES,
    "spec.requirements[].key": label_key_rules("self", allow_nodepool=True),
}
