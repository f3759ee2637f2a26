"""NodePool (karpenter.sh/v1): what nodes may be launched, with which constraints and limits.

Validation follows Karpenter's CRD (patterns, ranges, CEL rules) and its runtime NodePool validation
(restricted label domains): `NodePool.model_validate(obj)` rejects what Karpenter would reject.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from apis.base import KubeModel
from apis.cel import CelRule, RuleTable, not_empty
from apis.ec2nodeclass import GROUP as EC2NODECLASS_GROUP
from apis.ec2nodeclass import KIND as EC2NODECLASS_KIND
from apis.labels import (
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    nodepool_label_reason,
)
from apis.meta import Condition, ObjectMeta
from apis.requirements import (
    REQUIREMENT_LIST_RULES,
    LabelValue,
    NodeSelectorRequirement,
    Taint,
    checked_requirement,
    label_key_rules,
    label_map_rules,
    validate_label_key,
)
from apis.values.duration import BudgetDuration, Duration, FiniteDuration
from apis.values.quantity import Quantity
from apis.values.syntax import SchemaExtra, field_error

__all__ = [
    "API_VERSION",
    "CEL_RULES",
    "KIND",
    "Budget",
    "Disruption",
    "Duration",
    "FiniteDuration",
    "NodeClaimTemplate",
    "NodeClaimTemplateMetadata",
    "NodeClaimTemplateSpec",
    "NodeClassReference",
    "NodePool",
    "NodePoolSpec",
    "NodePoolStatus",
]

API_VERSION: Final = "karpenter.sh/v1"
GROUP: Final = "karpenter.sh"
KIND: Final = "NodePool"

BUDGET_NODES_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"
BUDGET_SCHEDULE_PATTERN = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
_BUDGET_NODES = re.compile(BUDGET_NODES_PATTERN)
_BUDGET_SCHEDULE = re.compile(BUDGET_SCHEDULE_PATTERN)
MAX_REQUIREMENTS = 100
MAX_BUDGETS = 50
MAX_LABELS = 100

# The version of `NodePool.template_hash`, stamped next to the hash on each NodeClaim. It is not Karpenter's
# "v3": the algorithm is nodeflow's own, so a claim Karpenter stamped (or an older nodeflow) has another
# version, and is re-stamped rather than found drifted; Karpenter does the same with nodeflow's claims.
TEMPLATE_HASH_VERSION = "nodeflow-v1"


def is_managed(obj: Mapping[str, Any]) -> bool:
    """Whether a NodePool or NodeClaim, as read from the API, is this provider's to act on: its
    nodeClassRef names an EC2NodeClass. Karpenter's AWS provider ignores one whose nodeClassRef names
    another provider's node class (Karpenter core's KWOKNodeClass, say): it neither provisions for it,
    nor writes its status, nor disrupts its nodes. One without a readable group and kind, or with a
    group that is no API group (`karpenter.k8s.aws/v1`), counts as managed, so that validation reports
    what is wrong with it."""
    ref = node_class_ref(obj)
    group, kind = ref.get("group"), ref.get("kind")
    if not isinstance(group, str) or not isinstance(kind, str) or "/" in group:
        return True
    return group == EC2NODECLASS_GROUP and kind == EC2NODECLASS_KIND


def node_class_ref(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The nodeClassRef of a NodePool (its template's) or a NodeClaim as read from the API, whatever shape
    the rest of the object has; empty when there is none to read."""
    spec = _mapping(obj.get("spec"))
    template_spec = _mapping(_mapping(spec.get("template")).get("spec"))
    return _mapping((template_spec or spec).get("nodeClassRef"))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _not_empty(what: str) -> AfterValidator:
    def check(value: str) -> str:
        if value == "":
            raise ValueError(f"{what} may not be empty; set it")
        return value

    return AfterValidator(check)


def _group(value: str) -> str:
    if "/" in value:
        raise ValueError(f'group "{value}" must be an API group without a version, e.g. "karpenter.k8s.aws"')
    return value


def _nodepool_label_key(key: str) -> str:
    validate_label_key(key)
    reason = nodepool_label_reason(key)
    if reason:
        raise ValueError(reason)
    return key


def _nodepool_requirement(requirement: NodeSelectorRequirement) -> NodeSelectorRequirement:
    """`checked_requirement` with the NodePool's key rules (karpenter.sh/nodepool refused too)."""
    return checked_requirement(requirement, nodepool_label_reason)


def _budget_nodes(value: str) -> str:
    if not _BUDGET_NODES.fullmatch(value):
        raise ValueError(f'invalid budget nodes "{value}": use a count such as "5" or a percentage from "0%" to "100%"')
    return value


def _budget_schedule(value: str) -> str:
    if not _BUDGET_SCHEDULE.fullmatch(value):
        raise ValueError(
            f'invalid budget schedule "{value}": use a five-field cron expression such as "0 9 * * mon-fri" '
            'or a macro such as "@daily"'
        )
    return value


NodePoolLabelKey = Annotated[str, AfterValidator(_nodepool_label_key)]
NodePoolRequirement = Annotated[NodeSelectorRequirement, AfterValidator(_nodepool_requirement)]


class NodeClassReference(KubeModel):
    """The provider node class (for AWS: group karpenter.k8s.aws, kind EC2NodeClass) and its name."""

    group: Annotated[str, _not_empty("group"), AfterValidator(_group), SchemaExtra({"pattern": "^[^/]*$"})]
    kind: Annotated[str, _not_empty("kind")]
    name: Annotated[str, _not_empty("name")]


class NodeClaimTemplateMetadata(KubeModel):
    """Labels and annotations copied to every NodeClaim and Node. Label keys may not use the restricted
    domains (see apis.labels.restricted_label_reason)."""

    labels: dict[NodePoolLabelKey, LabelValue] = Field(default_factory=dict, max_length=MAX_LABELS)
    annotations: dict[str, str] = Field(default_factory=dict)


class NodeClaimTemplateSpec(KubeModel):
    """The NodeClaim every launch starts from (requests are added by the scheduler)."""

    requirements: list[NodePoolRequirement] = Field(default_factory=list, max_length=MAX_REQUIREMENTS)
    node_class_ref: NodeClassReference
    taints: list[Taint] = Field(default_factory=list)
    startup_taints: list[Taint] = Field(default_factory=list)
    expire_after: Duration = "720h"
    termination_grace_period: FiniteDuration | None = None

    @model_validator(mode="after")
    def _distinct_taints(self) -> NodeClaimTemplateSpec:
        _reject_duplicate_taints(self.taints, self.startup_taints)
        return self


def duplicate_taint(taints: list[Taint], startup_taints: list[Taint]) -> tuple[str, int, Taint] | None:
    """The first taint (list wire name, index, taint) whose key and effect repeat an earlier one across both
    lists, as Karpenter's validation forbids; None when all are distinct."""
    seen: set[tuple[str, str]] = set()
    for field_name, listed in (("taints", taints), ("startupTaints", startup_taints)):
        for index, taint in enumerate(listed):
            identity = (taint.key, taint.effect)
            if identity in seen:
                return field_name, index, taint
            seen.add(identity)
    return None


def _reject_duplicate_taints(taints: list[Taint], startup_taints: list[Taint]) -> None:
    duplicate = duplicate_taint(taints, startup_taints)
    if duplicate:
        field_name, index, taint = duplicate
        raise field_error(
            field_name,
            f"duplicate taint Key/Effect pair {taint.key}={taint.effect}; a node carries one taint per key and "
            "effect, remove the repeat",
            index,
        )


class NodeClaimTemplate(KubeModel):
    metadata: NodeClaimTemplateMetadata = Field(default_factory=NodeClaimTemplateMetadata)
    spec: NodeClaimTemplateSpec


DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]


class Budget(KubeModel):
    """At most `nodes` (a count or a percentage of the pool) disrupted at once; with `schedule` (cron) and
    `duration`, only while a window opened by the schedule lasts. `reasons` limits it to those methods."""

    nodes: Annotated[str, AfterValidator(_budget_nodes), SchemaExtra({"pattern": BUDGET_NODES_PATTERN})] = "10%"
    schedule: (
        Annotated[str, AfterValidator(_budget_schedule), SchemaExtra({"pattern": BUDGET_SCHEDULE_PATTERN})] | None
    ) = None
    duration: BudgetDuration | None = Field(default=None, validate_default=True)
    reasons: list[DisruptionReason] | None = Field(default=None, max_length=50)

    @field_validator("duration")
    @classmethod
    def _schedule_with_duration(cls, duration: str | None, info: ValidationInfo) -> str | None:
        if "schedule" not in info.data:
            return duration  # the schedule itself was invalid and is reported
        if (info.data["schedule"] is None) != (duration is None):
            raise ValueError(
                "'schedule' must be set with 'duration': set both (e.g. schedule \"0 9 * * mon-fri\" and "
                'duration "8h") or neither'
            )
        return duration


class Disruption(KubeModel):
    consolidate_after: Duration = "0s"
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = "WhenEmptyOrUnderutilized"
    budgets: list[Budget] = Field(
        default_factory=lambda: [Budget()], max_length=MAX_BUDGETS, json_schema_extra={"default": [{"nodes": "10%"}]}
    )


class NodePoolSpec(KubeModel):
    """A static NodePool (replicas set, alpha) may only limit `nodes` and may not set a weight."""

    template: NodeClaimTemplate
    disruption: Disruption = Field(
        default_factory=Disruption, json_schema_extra={"default": {"consolidateAfter": "0s"}}
    )
    limits: dict[str, Quantity] = Field(default_factory=dict)
    weight: int | None = Field(default=None, ge=1, le=100)
    replicas: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _static_pool_rules(self) -> NodePoolSpec:
        if self.replicas is None:
            return self
        if set(self.limits) - {"nodes"}:
            raise field_error("limits", "only 'limits.nodes' is supported on static NodePools (replicas set)")
        if self.weight is not None:
            raise field_error("weight", "'weight' is not supported on static NodePools (replicas set); remove it")
        return self


class NodePoolStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=list)
    resources: dict[str, str] = Field(default_factory=dict)
    nodes: int = 0
    node_class_observed_generation: int | None = None


class NodePool(KubeModel):
    api_version: Literal["karpenter.sh/v1"] = API_VERSION
    kind: Literal["NodePool"] = KIND
    metadata: ObjectMeta
    spec: NodePoolSpec
    status: NodePoolStatus = Field(default_factory=NodePoolStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    def hash_annotations(self) -> dict[str, str]:
        """The NodeClaim annotations that record which template it was launched from (NodePoolDrifted)."""
        return {NODEPOOL_HASH_ANNOTATION: self.template_hash(), NODEPOOL_HASH_VERSION_ANNOTATION: TEMPLATE_HASH_VERSION}

    def template_hash(self) -> str:
        """A stable hash (version TEMPLATE_HASH_VERSION) of the NodeClaim template (labels, annotations,
        taints, startup taints, expiry, grace period, node class): nodes launched from another hash have
        drifted. Requirements are excluded, as in Karpenter (their drift is judged against the node's
        labels instead)."""
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


NODE_CLASS_REF_RULES: RuleTable = {
    "group": (not_empty("group"),),
    "kind": (not_empty("kind"),),
    "name": (not_empty("name"),),
}

# The CRD's CEL rules (apis.cel), where Karpenter's NodePool CRD attaches them. The models check the same
# (budgets, static pools, restricted labels, requirements); the node class's group and kind may not change.
CEL_RULES: RuleTable = {
    "spec": (
        CelRule(
            "has(self.replicas) == has(oldSelf.replicas)",
            "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes",
        ),
        CelRule(
            "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
            "(size(self.limits) == 1 && 'nodes' in self.limits))",
            "only 'limits.nodes' is supported on static NodePools",
        ),
        CelRule("!has(self.replicas) || !has(self.weight)", "'weight' is not supported on static NodePools"),
    ),
    "spec.disruption.budgets": (
        CelRule("self.all(x, has(x.schedule) == has(x.duration))", "'schedule' must be set with 'duration'"),
    ),
    "spec.template.metadata.labels": label_map_rules(allow_nodepool=False),
    "spec.template.spec.nodeClassRef": (
        CelRule("self.group == oldSelf.group", "nodeClassRef.group is immutable"),
        CelRule("self.kind == oldSelf.kind", "nodeClassRef.kind is immutable"),
    ),
    **{f"spec.template.spec.nodeClassRef.{name}": rules for name, rules in NODE_CLASS_REF_RULES.items()},
    "spec.template.spec.requirements": REQUIREMENT_LIST_RULES,
    "spec.template.spec.requirements[].key": label_key_rules("self", allow_nodepool=False),
}
