"""The scheduler's contract: what it is given and what it decides. Pure data.

`scheduling.solve(SchedulingInput) -> Plan` is deterministic: the same input gives the same plan, byte
for byte (`Plan.model_dump_json()`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from apis.requirements import NodeSelectorRequirement, Taint

Obj = dict[str, Any]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


PreferencePolicy = Literal["Respect", "Ignore"]
MinValuesPolicy = Literal["Strict", "BestEffort"]


@dataclass(frozen=True)
class SchedulingPolicies:
    """Karpenter's scheduling settings (`--preference-policy`, `--min-values-policy`), which a worker
    applies to every SchedulingInput it builds; see SchedulingInput."""

    preference_policy: PreferencePolicy = "Respect"
    min_values_policy: MinValuesPolicy = "Strict"

    def fields(self) -> dict[str, str]:
        """As SchedulingInput's fields."""
        return {"preference_policy": self.preference_policy, "min_values_policy": self.min_values_policy}


class SchedulingInput(_Model):
    """A snapshot of the cluster. Kubernetes objects are plain JSON dicts as the API serves them.

    - pods: the pending pods to place.
    - bound_pods: pods already on nodes (spec.nodeName set): they use capacity and count for topology
      spread and pod (anti-)affinity.
    - nodes: existing Nodes; node_claims: NodeClaims (launched or in flight). A claim whose Node exists
      is represented by the Node; one without a Node is capacity that is coming (its allocatable from
      status.allocatable, else the smallest instance type its requirements allow).
    - instance_types: the base catalog (default kubelet settings); the scheduler applies each
      EC2NodeClass's kubelet settings (maxPods, podsPerCore, reserved) itself.
    - preference_policy: Karpenter's `--preference-policy`. "Respect" first treats the pods' preferences as
      required, relaxing them one at a time when a pod does not fit; "Ignore" drops them up front
      (preferred node affinity, preferred pod affinity and anti-affinity, ScheduleAnyway spreads).
    - min_values_policy: Karpenter's `--min-values-policy`. "Strict": a new node whose instance types
      cannot meet a requirement's minValues is not planned; "BestEffort": it is, with that minValues
      lowered to what its instance types offer (`PlannedNodeClaim.min_values_relaxed`). A node with pods
      already planned on it takes no pod that would make it fall short; the pod goes to another.
    """

    pods: list[Obj] = Field(default_factory=list)
    bound_pods: list[Obj] = Field(default_factory=list)
    nodes: list[Obj] = Field(default_factory=list)
    node_claims: list[NodeClaim] = Field(default_factory=list)
    node_pools: list[NodePool] = Field(default_factory=list)
    node_classes: list[EC2NodeClass] = Field(default_factory=list)
    instance_types: list[InstanceType] = Field(default_factory=list)
    daemonsets: list[Obj] = Field(default_factory=list)
    persistent_volume_claims: list[Obj] = Field(default_factory=list)
    persistent_volumes: list[Obj] = Field(default_factory=list)
    storage_classes: list[Obj] = Field(default_factory=list)
    runtime_classes: list[Obj] = Field(default_factory=list)
    namespaces: list[Obj] = Field(default_factory=list)  # for pod (anti-)affinity namespaceSelectors
    preference_policy: PreferencePolicy = "Respect"
    min_values_policy: MinValuesPolicy = "Strict"


class PlannedNodeClaim(_Model):
    """A new node to launch: the claim's requirements (NodePool's and pods' intersected; template
    labels as `In`), up to 60 compatible instance types cheapest first, the pods it is for, and the
    price of its cheapest option."""

    node_pool: str
    node_class: str = ""
    instance_types: list[str]
    requirements: list[NodeSelectorRequirement]
    pods: list[str]  # "namespace/name"
    price: float
    requests: dict[str, str] = Field(default_factory=dict)  # pods + daemonset overhead
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    startup_taints: list[Taint] = Field(default_factory=list)
    min_values_relaxed: bool = False  # a minValues was lowered to plan it (min_values_policy BestEffort)


class ExistingNodePlacement(_Model):
    """Pods placed on a Node that exists, or on a NodeClaim in flight (name is the node's or claim's)."""

    name: str
    pods: list[str]
    node_claim: bool = False


class UnschedulablePod(_Model):
    pod: str  # "namespace/name"
    reason: str  # which constraint, which NodePool, why


class Plan(_Model):
    node_claims: list[PlannedNodeClaim] = Field(default_factory=list)
    existing_nodes: list[ExistingNodePlacement] = Field(default_factory=list)
    unschedulable: list[UnschedulablePod] = Field(default_factory=list)
    # ready NodePools whose own requirements leave no instance type of their node class (Karpenter's
    # NoCompatibleInstanceTypes)
    node_pools_without_types: list[str] = Field(default_factory=list)
