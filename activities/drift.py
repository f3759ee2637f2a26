"""Gathering the facts a drift check compares (scheduling.drift holds the comparison).

One check reads the NodeClaim, its NodePool and its EC2NodeClass from the API (three GETs), cheap enough to
run every few minutes for every node. The node class's AMIs, subnets and security groups come from its
status when a controller has resolved them there, else from the cloud provider's resolver through
`ResolvedNodeClasses`, which asks the cloud at most once per node class version and TTL for the whole
worker. The instance is read only when the cloud provider reports its network (cloudprovider.Instance
with `subnet_id` and `security_group_ids`); until then subnet and security group drift stay undetected
rather than guessed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from apis import labels
from apis.ec2nodeclass import EC2NodeClass
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from cloudprovider.errors import InstanceNotFoundError
from cloudprovider.types import CloudProvider, Instance, ResolvedNodeClass
from scheduling.drift import DriftFacts

# Bump when what the check compares changes; the Drifted condition's message carries it, so a node marked
# by an older check is recognisable (and the workflow's `patched` guard versions the command sequence).
DRIFT_CHECK_VERSION = "v1"
RESOLVED_TTL_SECONDS = 60.0


class ResolvedNodeClasses:
    """What each EC2NodeClass resolves to, cached per (name, resourceVersion) for `ttl` seconds and shared by
    the worker's activity threads, so drift checks of many nodes cost one cloud lookup per node class."""

    def __init__(
        self, cloud: CloudProvider, ttl: float = RESOLVED_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cloud = cloud
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[str, float, ResolvedNodeClass]] = {}

    def get(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        version = node_class.metadata.resource_version or ""
        now = self.clock()
        with self._lock:
            entry = self._entries.get(node_class.name)
            if entry is not None and entry[0] == version and now - entry[1] < self.ttl:
                return entry[2]
        resolved = self.cloud.resolve_node_class(node_class)
        with self._lock:
            self._entries[node_class.name] = (version, now, resolved)
        return resolved


def instance_network(instance: Instance | None) -> tuple[str, list[str]]:
    """The instance's subnet and security groups, when the cloud provider reports them ('' and [] when not:
    unknown facts never make a claim drifted)."""
    if instance is None:
        return "", []
    return instance.subnet_id, sorted(instance.security_group_ids)


def drift_facts(
    claim: NodeClaim,
    pool: NodePool | None,
    node_class: EC2NodeClass | None,
    cloud: CloudProvider,
    instance_id: str,
    resolved_node_classes: ResolvedNodeClasses | None = None,
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
        resolver = resolved_node_classes or ResolvedNodeClasses(cloud)
        resolved = resolver.get(node_class)
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
