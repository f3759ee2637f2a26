"""activities.drift: the node class lookups drift checks share."""

from __future__ import annotations

from activities.drift import ResolvedNodeClasses
from apis.ec2nodeclass import EC2NodeClass
from cloudprovider.fake import FakeCloudProvider
from cloudprovider.types import ResolvedNodeClass


class CountingCloud(FakeCloudProvider):
    def __init__(self) -> None:
        super().__init__()
        self.resolves = 0

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        self.resolves += 1
        return super().resolve_node_class(node_class)


def node_class(version: str) -> EC2NodeClass:
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default", "resourceVersion": version},
            "spec": {
                "role": "R",
                "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
            },
        }
    )


def test_one_cloud_lookup_per_node_class_version_and_ttl() -> None:
    cloud = CountingCloud()
    now = [0.0]
    cache = ResolvedNodeClasses(cloud, ttl=60, clock=lambda: now[0])
    for _ in range(5):
        assert cache.get(node_class("1")).amis[0]["id"] == "ami-fake"
    assert cloud.resolves == 1
    cache.get(node_class("2"))  # the node class changed: look again
    assert cloud.resolves == 2
    now[0] = 61.0  # the cloud side may have changed (a new AMI release): look again
    cache.get(node_class("2"))
    assert cloud.resolves == 3
