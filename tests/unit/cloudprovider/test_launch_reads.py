"""Launches read a node class's subnets, security groups, AMIs and placement group once per version and TTL."""

from __future__ import annotations

from typing import Any

import pytest

from apis.ec2nodeclass import EC2NodeClass
from cloudprovider.aws.launch.reads import LaunchReads
from cloudprovider.errors import NodeClassNotReadyError
from cloudprovider.nodeclass_cache import NodeClassCache


def node_class(version: str | None) -> EC2NodeClass:
    metadata: dict[str, Any] = {"name": "default"}
    if version is not None:
        metadata["resourceVersion"] = version
    return EC2NodeClass.model_validate(
        {
            "metadata": metadata,
            "spec": {
                "role": "R",
                "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
            },
        }
    )


class CountingResolver:
    """Stands in for NodeClassResolver; counts the reads each method makes."""

    def __init__(self) -> None:
        self.reads: dict[str, int] = {}
        self.fail_subnets = False

    def _read(self, what: str) -> None:
        self.reads[what] = self.reads.get(what, 0) + 1

    def subnets(self, _: EC2NodeClass) -> list[dict[str, str]]:
        self._read("subnets")
        if self.fail_subnets:
            raise NodeClassNotReadyError("EC2NodeClass default: spec.subnetSelectorTerms matched no subnet")
        return [{"id": "subnet-1", "zone": "us-west-2a", "zoneID": "usw2-az1"}]

    def security_groups(self, _: EC2NodeClass) -> list[dict[str, str]]:
        self._read("security_groups")
        return [{"id": "sg-1", "name": "nodes"}]

    def amis(self, _: EC2NodeClass) -> list[Any]:
        self._read("amis")
        return []

    def placement_group(self, _: EC2NodeClass) -> None:
        self._read("placement_group")
        return None


def reads_of(resolver: CountingResolver, clock: list[float]) -> LaunchReads:
    return LaunchReads(resolver, ttl=60, clock=lambda: clock[0])  # type: ignore[arg-type]


def launch_reads(reads: LaunchReads, nc: EC2NodeClass) -> None:
    reads.subnets(nc), reads.security_groups(nc), reads.amis(nc), reads.placement_group(nc)


def test_a_burst_of_launches_reads_each_fact_once() -> None:
    resolver, clock = CountingResolver(), [0.0]
    reads = reads_of(resolver, clock)
    for _ in range(500):
        launch_reads(reads, node_class("7"))
    assert resolver.reads == {"subnets": 1, "security_groups": 1, "amis": 1, "placement_group": 1}


def test_a_changed_node_class_or_an_expired_entry_is_read_again() -> None:
    resolver, clock = CountingResolver(), [0.0]
    reads = reads_of(resolver, clock)
    launch_reads(reads, node_class("7"))
    launch_reads(reads, node_class("8"))  # its spec or status changed
    assert resolver.reads["amis"] == 2
    clock[0] = 61.0  # EC2 may have changed (a new AMI behind an alias)
    launch_reads(reads, node_class("8"))
    assert resolver.reads["amis"] == 3


def test_a_failed_read_is_not_remembered() -> None:
    resolver, clock = CountingResolver(), [0.0]
    reads = reads_of(resolver, clock)
    resolver.fail_subnets = True
    with pytest.raises(NodeClassNotReadyError, match="subnetSelectorTerms"):
        reads.subnets(node_class("7"))
    resolver.fail_subnets = False
    assert reads.subnets(node_class("7"))[0]["id"] == "subnet-1"
    assert resolver.reads["subnets"] == 2


def test_a_node_class_without_a_resource_version_is_read_every_time() -> None:
    loads: list[str] = []
    cache = NodeClassCache(lambda nc: loads.append(nc.name) or len(loads), ttl=60, clock=lambda: 0.0)
    assert [cache.get(node_class(None)) for _ in range(3)] == [1, 2, 3]
    assert [cache.get(node_class("1")) for _ in range(3)] == [4, 4, 4]
