"""`LaunchReads`: what launching on an EC2NodeClass reads from EC2 and SSM (its subnets, security groups,
AMIs and placement group), looked up once per node class version and minute for all launches.

Without it every launch read them again: three DescribeSubnets, a DescribeSecurityGroups, a DescribeImages
and one GetParameter per AMI variant of an alias (five for AL2023) per NodeClaim, so a burst of 500
NodeClaims made about 5,000 calls and SSM's GetParameter quota (40 a second by default) throttled it.
Karpenter's launches read the same facts from its subnet, security group and AMI providers, each cached
for a minute. A changed EC2NodeClass (its spec, or the status the node class controller writes when an
AMI or subnet changes) has a new resourceVersion and is read afresh; a failed read is not remembered.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from apis.ec2nodeclass import EC2NodeClass
from cloudprovider.aws.nodeclass.placementgroups import PlacementGroup
from cloudprovider.aws.nodeclass.resolve import NodeClassResolver, ResolvedAMI
from cloudprovider.nodeclass_cache import RESOLVED_TTL_SECONDS, NodeClassCache


class LaunchReads:
    """`NodeClassResolver`'s per-launch reads through a `NodeClassCache` each; thread-safe."""

    def __init__(
        self,
        resolver: NodeClassResolver,
        ttl: float = RESOLVED_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._subnets = NodeClassCache(resolver.subnets, ttl, clock)
        self._security_groups = NodeClassCache(resolver.security_groups, ttl, clock)
        self._amis = NodeClassCache(resolver.amis, ttl, clock)
        self._placement_group = NodeClassCache(resolver.placement_group, ttl, clock)

    def subnets(self, node_class: EC2NodeClass) -> list[dict[str, str]]:
        """`NodeClassResolver.subnets`; the caller must not change the list."""
        return self._subnets.get(node_class)

    def security_groups(self, node_class: EC2NodeClass) -> list[dict[str, str]]:
        """`NodeClassResolver.security_groups`; the caller must not change the list."""
        return self._security_groups.get(node_class)

    def amis(self, node_class: EC2NodeClass) -> list[ResolvedAMI]:
        """`NodeClassResolver.amis`; the caller must not change the list."""
        return self._amis.get(node_class)

    def placement_group(self, node_class: EC2NodeClass) -> PlacementGroup | None:
        """`NodeClassResolver.placement_group`."""
        return self._placement_group.get(node_class)
