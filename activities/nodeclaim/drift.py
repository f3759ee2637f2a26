"""Gathering the facts a drift check compares (scheduling.drift holds the comparison).

A check reads the NodeClaim from the API; its NodePool and EC2NodeClass come from the worker's shared
reads (kube.shared_reads), or fresh when the check was triggered by a change to one of them. The
node class's AMIs, subnets and security groups come from its status when they were resolved there for
the current spec (its Ready condition observed this generation), else from the cloud provider's
resolver through `ResolvedNodeClasses`; the instance types it offers through `OfferedInstanceTypes`.
Both ask the cloud at most once per node class version and TTL for the whole worker.

The instance's subnet and security groups come from `InstanceNetworks`: one listing of the cluster's live
instances, shared by the worker's checks and refreshed at most once per TTL. N nodes' checks cost about
one paginated DescribeInstances a minute, not N calls (at 10,000 nodes checked every 5 minutes, 33 single
DescribeInstances a second would exceed EC2's refill rate for the whole account). They are known only
when the cloud provider reports them (cloudprovider.Instance with `subnet_id` and `security_group_ids`);
until then subnet and security group drift stay undetected rather than guessed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from apis import labels
from apis.ec2nodeclass import STATIC_HASH_VERSION, EC2NodeClass, EC2NodeClassStatus
from apis.nodeclaim import LAUNCHED, NodeClaim
from apis.nodepool import TEMPLATE_HASH_VERSION, NodePool
from cloudprovider.errors import CloudProviderError, InstanceNotFoundError, NodeClassNotReadyError
from cloudprovider.nodeclass_cache import RESOLVED_TTL_SECONDS, NodeClassCache
from cloudprovider.types import TAG_NAME, CloudProvider, Instance, ResolvedNodeClass
from scheduling.drift import DriftFacts

# Bump when what the check compares changes; the Drifted condition's message carries it, so a node marked
# by an older check is recognisable.
DRIFT_CHECK_VERSION = "v3"  # v2: InstanceTypeNotFound and NodeClassDrift; v3: PlacementGroupDrift
# Karpenter judges InstanceTypeNotFound only for claims launched at least this long ago.
INSTANCE_TYPE_GRACE = timedelta(hours=1)


class ResolvedNodeClasses(NodeClassCache[ResolvedNodeClass]):
    """What each EC2NodeClass resolves to (AMIs, subnets, security groups)."""

    def __init__(
        self, cloud: CloudProvider, ttl: float = RESOLVED_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(cloud.resolve_node_class, ttl, clock)


class OfferedInstanceTypes(NodeClassCache[frozenset[str]]):
    """The names of the instance types each EC2NodeClass can launch now (InstanceTypeNotFound)."""

    def __init__(
        self, cloud: CloudProvider, ttl: float = RESOLVED_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(lambda node_class: frozenset(it.name for it in cloud.instance_types(node_class)), ttl, clock)


Network = tuple[str, list[str]]  # (subnet id, sorted security group ids); ("", []) when unknown

log = logging.getLogger(__name__)


class InstanceNetworks:
    """The subnet and security groups of each live instance of the cluster, from one `cloud.list()` that
    the worker's activity threads share. The listing is refreshed at most once per `ttl` seconds, by one
    thread while the others keep reading the previous one; an instance launched after the listing (not
    in it) is read on its own with `cloud.get`. A failed refresh keeps the previous listing (logged);
    with none yet, the error is raised. The listing also keeps each instance's `Name` tag (`name`), for the
    claim sweep's naming of instances after their Nodes."""

    def __init__(
        self, cloud: CloudProvider, ttl: float = RESOLVED_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cloud = cloud
        self.ttl = ttl
        self.clock = clock
        self._refreshing = threading.Lock()
        self._listing: dict[str, Network] | None = None
        self._names: dict[str, str] = {}
        self._listed_at = 0.0

    def get(self, instance_id: str) -> Network:
        listing = self._current()
        if instance_id in listing:
            return listing[instance_id]
        try:
            return instance_network(self.cloud.get(instance_id))
        except InstanceNotFoundError:
            return instance_network(None)

    def name(self, instance_id: str) -> str | None:
        """The instance's `Name` tag in the last listing ("" for none); None when it was not listed."""
        return self._names.get(instance_id)

    def named(self, instance_id: str, name: str) -> None:
        """Record that the instance is now tagged `Name` = `name` (until the next listing says)."""
        if instance_id in self._names:
            self._names = {**self._names, instance_id: name}

    def _current(self) -> dict[str, Network]:
        listing = self._listing
        if listing is not None and self.clock() - self._listed_at < self.ttl:
            return listing
        # Stale or missing: one thread lists again. With a stale listing the others do not wait for it.
        if not self._refreshing.acquire(blocking=listing is None):
            return listing or {}
        try:
            if self._listing is not None and self.clock() - self._listed_at < self.ttl:
                return self._listing  # another thread refreshed it while this one waited
            started = self.clock()
            try:
                instances = self.cloud.list()
                fresh = {i.id: instance_network(i) for i in instances}
            except CloudProviderError as err:
                if self._listing is None:
                    raise
                log.warning("listing the cluster's instances for drift checks failed (keeping the last): %s", err)
                return self._listing
            self._listing, self._listed_at = fresh, started
            self._names = {i.id: i.tags.get(TAG_NAME, "") for i in instances}
            return fresh
        finally:
            self._refreshing.release()


def instance_network(instance: Instance | None) -> Network:
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
    instance_networks: InstanceNetworks | None = None,
    offered_instance_types: OfferedInstanceTypes | None = None,
    now: datetime | None = None,
) -> DriftFacts:
    """The facts for scheduling.drift.find_drift. A missing NodePool or EC2NodeClass leaves its facts
    unknown (their deletion is handled by garbage collection, not drift). Without `instance_networks` the
    instance is read on its own. The instance type is judged only with `offered_instance_types` and `now`
    (timezone-aware), for a claim Launched at least INSTANCE_TYPE_GRACE before `now`."""
    annotations = claim.metadata.annotations
    facts = DriftFacts(
        claim_hash=annotations.get(labels.NODEPOOL_HASH_ANNOTATION, ""),
        claim_hash_version=annotations.get(labels.NODEPOOL_HASH_VERSION_ANNOTATION, ""),
        claim_labels=dict(claim.metadata.labels),
        class_hash=annotations.get(labels.NODECLASS_HASH_ANNOTATION, ""),
        class_hash_version=annotations.get(labels.NODECLASS_HASH_VERSION_ANNOTATION, ""),
        image_id=claim.status.image_id or "",
    )
    if pool is not None:
        # The pool's hash is computed here, so its version is this code's (a version annotation on the
        # NodePool, e.g. Karpenter's, describes another algorithm's hash).
        facts = replace(
            facts,
            pool_hash=pool.template_hash(),
            pool_hash_version=TEMPLATE_HASH_VERSION,
            pool_requirements=list(pool.spec.template.spec.requirements),
        )
    if node_class is None:
        return facts
    facts = replace(facts, node_class_hash=node_class.static_hash(), node_class_hash_version=STATIC_HASH_VERSION)
    if offered_instance_types is not None and now is not None and launched_before(claim, now - INSTANCE_TYPE_GRACE):
        facts = replace(
            facts,
            instance_type=claim.metadata.labels.get(labels.INSTANCE_TYPE, ""),
            offered_instance_types=offered_instance_types.get(node_class),
        )
    resolver = resolved_node_classes or ResolvedNodeClasses(cloud)
    ami_ids, subnet_ids, group_ids = resolved_selection(node_class, resolver)
    subnet_id, instance_groups = instance_network(None)
    if instance_id and instance_networks is not None:
        subnet_id, instance_groups = instance_networks.get(instance_id)
    elif instance_id:
        try:
            subnet_id, instance_groups = instance_network(cloud.get(instance_id))
        except InstanceNotFoundError:
            pass
    return replace(
        facts,
        placement_group_id=placement_group_of(node_class, resolver),
        ami_ids=sorted(ami_ids),
        subnet_id=subnet_id,
        subnet_ids=sorted(subnet_ids),
        security_group_ids=instance_groups,
        resolved_security_group_ids=sorted(group_ids),
    )


def placement_group_of(node_class: EC2NodeClass, resolver: ResolvedNodeClasses) -> str | None:
    """The id of the placement group the node class selects now: "" without a selector, None (unknown, so
    no drift) when the selector resolves to nothing. Karpenter's CRD keeps no resolved group in the
    status, so the selector is resolved (once per node class version and TTL)."""
    if node_class.spec.placement_group_selector is None:
        return ""
    try:
        return resolver.get(node_class).placement_group_id or None
    except NodeClassNotReadyError:
        return None


def resolved_selection(
    node_class: EC2NodeClass, resolver: ResolvedNodeClasses
) -> tuple[list[str], list[str], list[str]]:
    """The AMI, subnet and security group ids the node class selects now: from its status when that was
    written for the current spec, else resolved (through `resolver`, cached per node class version)."""
    # The status names what the selector terms resolved to when it was written; after a spec change
    # (new amiSelectorTerms) it names the old AMIs until the next provisioning round rewrites it, so
    # only a status written for this generation is used, else the terms are resolved now.
    status = node_class.status if node_class.status_resolves_spec() else EC2NodeClassStatus()
    ami_ids = [a.id for a in status.amis]
    subnet_ids = [s.id for s in status.subnets]
    group_ids = [g.id for g in status.security_groups]
    if not (ami_ids and subnet_ids and group_ids):
        resolved = resolver.get(node_class)
        ami_ids = ami_ids or [a["id"] for a in resolved.amis if a.get("id")]
        subnet_ids = subnet_ids or [s["id"] for s in resolved.subnets if s.get("id")]
        group_ids = group_ids or [g["id"] for g in resolved.security_groups if g.get("id")]
    return ami_ids, subnet_ids, group_ids


def launched_before(claim: NodeClaim, moment: datetime) -> bool:
    """The claim's Launched condition turned True before `moment` (timezone-aware); False when unknown."""
    launched = next((c for c in claim.status.conditions if c.type == LAUNCHED and c.status == "True"), None)
    if launched is None or not launched.last_transition_time:
        return False
    try:
        at = datetime.fromisoformat(launched.last_transition_time.replace("Z", "+00:00"))
    except ValueError:
        return False
    return at.tzinfo is not None and at < moment
