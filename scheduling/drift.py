"""Drift: has a running NodeClaim stopped matching what its NodePool and EC2NodeClass ask for? Pure.

The checks are those of Karpenter v1's drift controller, in its order; the first that finds drift names
the reason of the claim's `Drifted` condition:

1. NodePoolDrifted: the claim's `karpenter.sh/nodepool-hash` differs from the NodePool's template hash
   (only when both carry the same hash version; a version bump re-stamps claims, it is not drift).
2. RequirementsDrifted: a NodePool requirement no longer admits the claim's labels.
3. InstanceTypeNotFound: the claim's instance type is no longer among its node class's instance types
   (judged only for claims launched at least an hour ago, as in Karpenter).
4. NodeClassDrift: the claim's `karpenter.k8s.aws/ec2nodeclass-hash` differs from the EC2NodeClass's
   static hash (same version rule as the NodePool's).
5. AMIDrift: the claim's image is not among the node class's resolved AMIs.
6. SecurityGroupDrift: the instance's security groups differ from the resolved ones.
7. SubnetDrift: the instance's subnet is not among the node class's resolved subnets.
8. PlacementGroupDrift: the claim's `karpenter.k8s.aws/placement-group-id` label is not the placement group
   the node class's `placementGroupSelector` resolves to now (a selector added, removed or pointing
   elsewhere; no label and no selector match).

Facts that are unknown (an empty resolved list, an instance whose subnet is not known) never make a claim
drifted: drift replaces nodes, so it must be certain. Detecting drift only marks the claim; replacing
drifted nodes is the disruption controller's job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from apis.labels import PLACEMENT_GROUP_ID, WELL_KNOWN_LABELS
from apis.requirements import NodeSelectorRequirement
from scheduling.constraints.requirements import from_api

NODEPOOL_DRIFTED = "NodePoolDrifted"
REQUIREMENTS_DRIFTED = "RequirementsDrifted"
AMI_DRIFTED = "AMIDrift"  # the AWS provider's reasons end in "Drift", the core's in "Drifted"
SUBNET_DRIFTED = "SubnetDrift"
SECURITY_GROUP_DRIFTED = "SecurityGroupDrift"
NODECLASS_DRIFTED = "NodeClassDrift"
INSTANCE_TYPE_NOT_FOUND = "InstanceTypeNotFound"
PLACEMENT_GROUP_DRIFTED = "PlacementGroupDrift"
REASONS = (
    NODEPOOL_DRIFTED,
    REQUIREMENTS_DRIFTED,
    INSTANCE_TYPE_NOT_FOUND,
    NODECLASS_DRIFTED,
    AMI_DRIFTED,
    SUBNET_DRIFTED,
    SECURITY_GROUP_DRIFTED,
    PLACEMENT_GROUP_DRIFTED,
)


@dataclass(frozen=True)
class Drift:
    """Why a claim drifted: a reason from REASONS and a message for people."""

    reason: str
    message: str


@dataclass(frozen=True)
class DriftFacts:
    """Everything the comparison needs, read by the caller. Empty strings and lists mean "unknown"."""

    claim_hash: str = ""
    claim_hash_version: str = ""
    pool_hash: str = ""
    pool_hash_version: str = ""
    pool_requirements: Sequence[NodeSelectorRequirement] = ()
    claim_labels: Mapping[str, str] = field(default_factory=dict)
    instance_type: str = ""  # the claim's, when it launched long enough ago to judge
    offered_instance_types: frozenset[str] = frozenset()  # its node class's instance types now
    class_hash: str = ""  # the claim's EC2NodeClass static hash, and its version
    class_hash_version: str = ""
    node_class_hash: str = ""  # the EC2NodeClass's now
    node_class_hash_version: str = ""
    image_id: str = ""
    ami_ids: Sequence[str] = ()
    subnet_id: str = ""
    subnet_ids: Sequence[str] = ()
    security_group_ids: Sequence[str] = ()
    resolved_security_group_ids: Sequence[str] = ()
    placement_group_id: str | None = None  # the node class's resolved group now; "" for none, None if unknown


def nodepool_drift(claim_hash: str, claim_version: str, pool_hash: str, pool_version: str) -> Drift | None:
    """The template hash differs under the same hash version."""
    if not claim_hash or not pool_hash or claim_version != pool_version or claim_hash == pool_hash:
        return None
    return Drift(NODEPOOL_DRIFTED, f"NodePool template hash is {pool_hash}, the node was launched from {claim_hash}")


def instance_type_not_found(instance_type: str, offered: frozenset[str]) -> Drift | None:
    """The claim's instance type is not one its node class offers now."""
    if not instance_type or not offered or instance_type in offered:
        return None
    return Drift(INSTANCE_TYPE_NOT_FOUND, f"instance type {instance_type} is no longer offered for the node class")


def node_class_drift(claim_hash: str, claim_version: str, class_hash: str, class_version: str) -> Drift | None:
    """The EC2NodeClass's static fields hash differs under the same hash version."""
    if not claim_hash or not class_hash or claim_version != class_version or claim_hash == class_hash:
        return None
    return Drift(
        NODECLASS_DRIFTED,
        f"EC2NodeClass static fields hash is {class_hash}, the node was launched from {claim_hash}",
    )


def requirements_drift(
    requirements: Iterable[NodeSelectorRequirement], claim_labels: Mapping[str, str]
) -> Drift | None:
    """A NodePool requirement rejects the claim's label for its key. A well-known label the claim does not
    carry is not drift (it was left to the cloud's choice); any other missing label the requirement needs is.
    """
    for key, req in sorted(from_api(requirements, "NodePool requirements").items()):
        value = claim_labels.get(key)
        if value is None and key in WELL_KNOWN_LABELS:
            continue
        if not req.allows(value):
            shown = f"{value!r}" if value is not None else "no value"
            return Drift(REQUIREMENTS_DRIFTED, f"NodePool requires {key} {req.describe()}, the node has {shown}")
    return None


def ami_drift(image_id: str, ami_ids: Sequence[str]) -> Drift | None:
    """The claim's image is not one the node class resolves to now."""
    if not image_id or not ami_ids or image_id in ami_ids:
        return None
    return Drift(AMI_DRIFTED, f"image {image_id} is not among the EC2NodeClass's AMIs ({', '.join(sorted(ami_ids))})")


def subnet_drift(subnet_id: str, subnet_ids: Sequence[str]) -> Drift | None:
    """The instance's subnet is not one the node class selects now."""
    if not subnet_id or not subnet_ids or subnet_id in subnet_ids:
        return None
    return Drift(
        SUBNET_DRIFTED, f"subnet {subnet_id} is not among the EC2NodeClass's subnets ({', '.join(sorted(subnet_ids))})"
    )


def security_group_drift(instance_groups: Sequence[str], resolved_groups: Sequence[str]) -> Drift | None:
    """The instance's security groups are not exactly the ones the node class selects now."""
    if not instance_groups or not resolved_groups or sorted(set(instance_groups)) == sorted(set(resolved_groups)):
        return None
    return Drift(
        SECURITY_GROUP_DRIFTED,
        f"security groups {', '.join(sorted(set(instance_groups)))} differ from the EC2NodeClass's "
        f"{', '.join(sorted(set(resolved_groups)))}",
    )


def placement_group_drift(claim_labels: Mapping[str, str], placement_group_id: str | None) -> Drift | None:
    """The claim's placement group label is not the group the node class resolves to now ("" for none)."""
    if placement_group_id is None:
        return None
    current = claim_labels.get(PLACEMENT_GROUP_ID, "")
    if current == placement_group_id:
        return None
    launched = f"placement group {current}" if current else "no placement group"
    wanted = f"placement group {placement_group_id}" if placement_group_id else "no placement group"
    return Drift(PLACEMENT_GROUP_DRIFTED, f"the node is in {launched}, the EC2NodeClass selects {wanted}")


def find_drift(facts: DriftFacts) -> Drift | None:
    """The first drift in Karpenter's order, or None when the claim still matches."""
    return (
        nodepool_drift(facts.claim_hash, facts.claim_hash_version, facts.pool_hash, facts.pool_hash_version)
        or requirements_drift(facts.pool_requirements, facts.claim_labels)
        or instance_type_not_found(facts.instance_type, facts.offered_instance_types)
        or node_class_drift(
            facts.class_hash, facts.class_hash_version, facts.node_class_hash, facts.node_class_hash_version
        )
        or ami_drift(facts.image_id, facts.ami_ids)
        or security_group_drift(facts.security_group_ids, facts.resolved_security_group_ids)
        or subnet_drift(facts.subnet_id, facts.subnet_ids)
        or placement_group_drift(facts.claim_labels, facts.placement_group_id)
    )
