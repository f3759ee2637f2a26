"""activities.nodeclaim.drift: the node class lookups and the instance listing that drift checks share."""

from __future__ import annotations

import builtins
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from activities.nodeclaim.drift import InstanceNetworks, ResolvedNodeClasses, drift_facts
from activities.provisioning.nodeclass_status import desired_status
from apis.ec2nodeclass import EC2NodeClass
from apis.nodeclaim import NodeClaim
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError, ThrottledError
from cloudprovider.fake import FakeCloudProvider
from cloudprovider.types import TAG_CLUSTER_PREFIX, Instance, ResolvedNodeClass
from scheduling.drift import AMI_DRIFTED, PLACEMENT_GROUP_DRIFTED, find_drift


class CountingCloud(FakeCloudProvider):
    def __init__(self) -> None:
        super().__init__()
        self.resolves = 0
        self.lists = 0
        self.gets: list[str] = []
        self.list_gate: threading.Event | None = None  # when set, list() waits for it

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        self.resolves += 1
        return super().resolve_node_class(node_class)

    def list(self) -> builtins.list[Instance]:
        self.lists += 1
        if self.list_gate is not None:
            self.list_gate.wait(timeout=10)
        return super().list()

    def get(self, instance_id: str) -> Instance:
        self.gets.append(instance_id)
        return super().get(instance_id)

    def put(self, instance_id: str, subnet: str, *groups: str) -> None:
        tags = {f"{TAG_CLUSTER_PREFIX}{self.cluster_name}": "owned"}
        self.put_running(instance_id, tags, subnet_id=subnet, security_group_ids=sorted(groups))


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


def test_drift_checks_of_many_instances_share_one_listing_per_ttl() -> None:
    cloud = CountingCloud()
    for n in range(50):
        cloud.put(f"i-{n}", "subnet-a", "sg-2", "sg-1")
    now = [0.0]
    networks = InstanceNetworks(cloud, ttl=60, clock=lambda: now[0])
    for n in range(50):
        assert networks.get(f"i-{n}") == ("subnet-a", ["sg-1", "sg-2"])
    assert (cloud.lists, cloud.gets) == (1, [])

    cloud.put("i-7", "subnet-a", "sg-3")  # its groups changed: seen after the ttl
    assert networks.get("i-7") == ("subnet-a", ["sg-1", "sg-2"])
    now[0] = 61.0
    assert networks.get("i-7") == ("subnet-a", ["sg-3"])
    assert cloud.lists == 2


def test_an_instance_newer_than_the_listing_is_read_on_its_own() -> None:
    cloud = CountingCloud()
    cloud.put("i-old", "subnet-a", "sg-1")
    networks = InstanceNetworks(cloud, ttl=60, clock=lambda: 0.0)
    networks.get("i-old")
    cloud.put("i-new", "subnet-b", "sg-1")
    assert networks.get("i-new") == ("subnet-b", ["sg-1"])
    assert networks.get("i-gone") == ("", [])  # unknown facts: never drifted
    assert (cloud.lists, cloud.gets) == (1, ["i-new", "i-gone"])


def test_a_failed_refresh_keeps_the_last_listing_and_a_first_one_raises() -> None:
    cloud = CountingCloud()
    cloud.put("i-1", "subnet-a", "sg-1")
    now = [0.0]
    networks = InstanceNetworks(cloud, ttl=60, clock=lambda: now[0])
    cloud.fail_next("list", ThrottledError("RequestLimitExceeded"))
    with pytest.raises(CloudProviderError):
        networks.get("i-1")
    assert networks.get("i-1") == ("subnet-a", ["sg-1"])
    now[0] = 61.0
    cloud.fail_next("list", ThrottledError("RequestLimitExceeded"))
    assert networks.get("i-1") == ("subnet-a", ["sg-1"])
    assert networks.get("i-1") == ("subnet-a", ["sg-1"])  # the next call lists again, and succeeds
    assert cloud.lists == 4


def test_concurrent_checks_list_once() -> None:
    cloud = CountingCloud()
    cloud.put("i-1", "subnet-a", "sg-1")
    cloud.list_gate = threading.Event()
    networks = InstanceNetworks(cloud, ttl=60, clock=lambda: 0.0)
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(networks.get, "i-1") for _ in range(8)]
        cloud.list_gate.set()
        assert {tuple(f.result()[1]) for f in futures} == {("sg-1",)}
    assert cloud.lists == 1


def resolved_with(ami: str) -> ResolvedNodeClass:
    return ResolvedNodeClass(
        subnets=[{"id": "subnet-a", "zone": "us-west-2a"}],
        security_groups=[{"id": "sg-fake"}],
        amis=[{"id": ami, "name": ami, "arch": "x86_64"}],
    )


def claim_on(image_id: str) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": "c"},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
            "status": {"imageID": image_id},
        }
    )


def with_status(generation: int, status: dict[str, object]) -> EC2NodeClass:
    obj = node_class(str(generation)).to_kube()
    obj["metadata"]["generation"] = generation
    return EC2NodeClass.model_validate({**obj, "status": status})


def test_a_status_resolved_before_the_last_spec_change_is_not_trusted_for_ami_drift() -> None:
    """Karpenter compares a node's image with the AMIs its EC2NodeClass resolves to now. After the AMI
    selector terms change, the status still names the old AMI until it is rewritten, so a drift check
    then resolves the terms itself, and the node launched from the old AMI has drifted."""
    cloud = CountingCloud()  # resolves the new terms to ami-fake
    old_status = desired_status({}, resolved_with("ami-old"), "", "2026-11-22T05:00:00Z", generation=1)
    changed = with_status(2, old_status)
    assert not changed.status_resolves_spec()
    drift = find_drift(drift_facts(claim_on("ami-old"), None, changed, cloud, ""))
    assert drift is not None and drift.reason == AMI_DRIFTED, drift
    assert cloud.resolves == 1


@pytest.mark.parametrize("generation", [None, 1])
def test_a_status_without_the_generation_it_observed_is_not_trusted_either(generation: int | None) -> None:
    cloud = CountingCloud()
    status = desired_status({}, resolved_with("ami-old"), "", "2026-11-22T05:00:00Z", generation=generation)
    changed = with_status(2 if generation else 1, status)
    assert find_drift(drift_facts(claim_on("ami-old"), None, changed, cloud, "")) is not None
    assert cloud.resolves == 1


def test_a_status_resolved_for_the_current_spec_is_used_without_asking_the_cloud() -> None:
    cloud = CountingCloud()
    current = with_status(3, desired_status({}, resolved_with("ami-old"), "", "2026-11-22T05:00:00Z", generation=3))
    assert current.status_resolves_spec()
    assert find_drift(drift_facts(claim_on("ami-old"), None, current, cloud, "")) is None
    assert cloud.resolves == 0


class PlacedCloud(CountingCloud):
    """Resolves a node class's placementGroupSelector to `group` ("" when none matches: not ready)."""

    def __init__(self, group: str) -> None:
        super().__init__()
        self.group = group

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        resolved = super().resolve_node_class(node_class)
        if node_class.spec.placement_group_selector is not None and not self.group:
            raise NodeClassNotReadyError("EC2NodeClass default: no available placement group matches")
        return resolved.model_copy(update={"placement_group_id": self.group})


def selecting_group(generation: int) -> EC2NodeClass:
    obj = node_class(str(generation)).to_kube()
    obj["metadata"]["generation"] = generation
    obj["spec"]["placementGroupSelector"] = {"name": "kafka"}
    return EC2NodeClass.model_validate(obj)


def in_group(group: str) -> NodeClaim:
    claim = claim_on("ami-fake")
    claim.metadata.labels["karpenter.k8s.aws/placement-group-id"] = group
    return claim


def test_placement_group_drift_compares_the_label_with_the_group_the_selector_resolves_to_now() -> None:
    """The EC2NodeClass status holds no placement group (Karpenter's CRD has no field for it): the
    selector is resolved, even when the status resolves the other selectors for this generation."""
    cloud = PlacedCloud("pg-new")
    current = selecting_group(3)
    status = desired_status({}, resolved_with("ami-fake"), "", "2026-11-24T00:00:00Z", generation=3)
    current = EC2NodeClass.model_validate({**current.to_kube(), "status": status})
    drift = find_drift(drift_facts(in_group("pg-old"), None, current, cloud, ""))
    assert drift is not None and drift.reason == PLACEMENT_GROUP_DRIFTED, drift
    assert find_drift(drift_facts(in_group("pg-new"), None, current, cloud, "")) is None
    # A group the selector no longer finds leaves the node class not ready: unknown, not drift.
    assert find_drift(drift_facts(in_group("pg-old"), None, current, PlacedCloud(""), "")) is None
    # Without a selector, a node in a group has drifted (the selector was removed); one in none has not.
    plain = with_status(3, status)
    assert find_drift(drift_facts(in_group("pg-old"), None, plain, cloud, "")) is not None
    assert find_drift(drift_facts(claim_on("ami-fake"), None, plain, cloud, "")) is None
