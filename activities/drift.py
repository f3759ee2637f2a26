"""Gathering the facts a drift check compares (scheduling.drift holds the comparison).

One check reads the NodeClaim, its NodePool and its EC2NodeClass from the API, and the instance from the
cloud provider: a handful of GETs, cheap enough to run every few minutes for every node. The node class's
AMIs, subnets and security groups come from its status when a controller has resolved them there, else
from the cloud provider's resolver.
"""

from __future__ import annotations

from dataclasses import replace

from apis import labels
from apis.ec2nodeclass import EC2NodeClass
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from cloudprovider.errors import InstanceNotFoundError
from cloudprovider.types import CloudProvider, Instance
from scheduling.drift import DriftFacts

# Bump when what the check compares changes; the Drifted condition's message carries it, so a node marked
# by an older check is recognisable (and the workflow's `patched` guard versions the command sequence).
DRIFT_CHECK_VERSION = "v1"


def instance_network(instance: Instance | None) -> tuple[str, list[str]]:
    """The instance's subnet and security groups, when the cloud provider reports them ('' and [] when not:
    unknown facts never make a claim drifted)."""
    if instance is None:
        return "", []
    subnet = getattr(instance, "subnet_id", "") or ""
    groups = getattr(instance, "security_group_ids", None) or []
    return str(subnet), sorted(str(g) for g in groups)


def drift_facts(
    claim: NodeClaim, pool: NodePool | None, node_class: EC2NodeClass | None, cloud: CloudProvider, instance_id: str
) -> DriftFacts:
    """The facts for scheduling.drift.find_drift. A missing NodePool or EC2NodeClass leaves its facts
    unknown (their deletion is handled by garbage collection, not drift)."""
    annotations = claim.metadata.annotations
    facts = DriftFacts(
        claim_hash=annotations.get(labels.NODEPOOL_HASH_ANNOTATION, ""),
        claim_hash_version=annotations.get(labels.NODEPOOL_HASH_VERSION_ANNOTATION, ""),
        claim_labels=dict(claim.metadata.labels),
        image_id=claim.status.image_id or "",
    )
    if pool is not None:
        # The NodePool carries no hash version annotation here: the claim's is the version it was stamped
        # with by this same code, so the hashes are comparable.
        facts = replace(
            facts,
            pool_hash=pool.template_hash(),
            pool_hash_version=pool.metadata.annotations.get(labels.NODEPOOL_HASH_VERSION_ANNOTATION, "")
            or facts.claim_hash_version,
            pool_requirements=list(pool.spec.template.spec.requirements),
        )
    if node_class is None:
        return facts
    status = node_class.status
    ami_ids = [a.id for a in status.amis]
    subnet_ids = [s.id for s in status.subnets]
    group_ids = [g.id for g in status.security_groups]
    if not (ami_ids and subnet_ids and group_ids):
        resolved = cloud.resolve_node_class(node_class)
        ami_ids = ami_ids or [a["id"] for a in resolved.amis if a.get("id")]
        subnet_ids = subnet_ids or [s["id"] for s in resolved.subnets if s.get("id")]
        group_ids = group_ids or [g["id"] for g in resolved.security_groups if g.get("id")]
    instance: Instance | None = None
    if instance_id:
        try:
            instance = cloud.get(instance_id)
        except InstanceNotFoundError:
            instance = None
    subnet_id, instance_groups = instance_network(instance)
    return replace(
        facts,
        ami_ids=sorted(ami_ids),
        subnet_id=subnet_id,
        subnet_ids=sorted(subnet_ids),
        security_group_ids=instance_groups,
        resolved_security_group_ids=sorted(group_ids),
    )
