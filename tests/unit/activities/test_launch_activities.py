"""The launch phase's activities (activities.nodeclaim.launch), each called directly over MemKube and the fake
cloud: launch (and its outcomes, and mark_launched, which it ends with), launch_failed."""

from __future__ import annotations

import pytest

from activities.nodeclaim.launch import LaunchActivities, LaunchFailedInput, LaunchOutcome, MarkLaunchedInput
from activities.nodeclaim.models import ClaimRef
from activities.nodeclaim.translate import region_of_zone
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.errors import NotFoundError
from kube.fake import Events, MemKube
from tests.unit.activities.claimworld import NAME, as_admin_patch, claim, condition, uid

M5_LARGE = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}
ZONE_A = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}


@pytest.fixture
def launching(kube: MemKube, cloud: FakeCloudProvider, events: Events) -> LaunchActivities:
    requirements = [*claim(kube)["spec"]["requirements"], M5_LARGE, ZONE_A]
    as_admin_patch(kube, r.NODECLAIM, NAME, {"spec": {"requirements": requirements}})
    return LaunchActivities(kube, cloud, events, "test")  # type: ignore[arg-type]


def test_launch_creates_the_instance_and_a_retry_adopts_it(
    launching: LaunchActivities, kube: MemKube, cloud: FakeCloudProvider
) -> None:
    ref = ClaimRef(name=NAME, uid=uid(kube))
    outcome = launching.launch(ref)
    assert not outcome.failure
    assert (outcome.instance_type, outcome.zone, outcome.capacity_type) == ("m5.large", "us-west-2a", "on-demand")
    assert outcome.node_pool == "default" and outcome.provider_id.endswith(outcome.instance_id)
    assert launching.launch(ref).instance_id == outcome.instance_id  # idempotent: one instance
    assert len(cloud.instances) == 1


def test_insufficient_capacity_is_an_outcome(launching: LaunchActivities, cloud: FakeCloudProvider) -> None:
    cloud.set_insufficient_capacity("m5.large", "us-west-2a")
    outcome = launching.launch(ClaimRef(name=NAME))
    assert (outcome.failure, outcome.instance_id) == ("InsufficientCapacity", "")


def test_a_missing_node_class_is_an_outcome(launching: LaunchActivities, kube: MemKube) -> None:
    kube.delete(r.EC2NODECLASS, "default")
    outcome = launching.launch(ClaimRef(name=NAME))
    assert outcome.failure == "NodeClassNotReady" and "does not exist" in outcome.message


def test_a_gone_or_foreign_claim_does_not_launch(launching: LaunchActivities, cloud: FakeCloudProvider) -> None:
    assert launching.launch(ClaimRef(name="gone")).failure == "NodeClaimGone"
    assert launching.launch(ClaimRef(name=NAME, uid="another-uid")).failure == "NodeClaimGone"
    assert cloud.create_calls == []


def test_a_claim_deleted_while_launching_reports_what_launched(
    launching: LaunchActivities, kube: MemKube, cloud: FakeCloudProvider
) -> None:
    launched = launching.launch(ClaimRef(name=NAME))
    with kube.as_admin():
        kube.delete(r.NODECLAIM, NAME)  # its finalizer keeps it, deleting
    again = launching.launch(ClaimRef(name=NAME))
    assert again.claim_deleting and again.instance_id == launched.instance_id
    assert len(cloud.create_calls) == 1


def test_launch_records_the_instance_on_the_claim(launching: LaunchActivities, kube: MemKube) -> None:
    outcome = launching.launch(ClaimRef(name=NAME))  # mark_launched is part of it
    marked = claim(kube)
    assert marked["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "m5.large"
    assert marked["metadata"]["labels"]["topology.kubernetes.io/zone"] == "us-west-2a"
    assert marked["status"]["providerID"] == outcome.provider_id
    assert marked["status"]["capacity"]["cpu"] == "2"
    launched = condition(kube, "Launched")
    assert launched and launched["status"] == "True" and outcome.instance_id in launched["message"]


def test_mark_launched_labels_the_region_and_the_zone_id_of_the_node_classs_subnet(
    launching: LaunchActivities, kube: MemKube
) -> None:
    subnets = [{"id": "subnet-a", "zone": "us-west-2a", "zoneID": "usw2-az1"}]
    as_admin_patch(kube, r.EC2NODECLASS, "default", {"status": {"subnets": subnets}})
    outcome = launching.launch(ClaimRef(name=NAME))
    launching.mark_launched(MarkLaunchedInput(name=NAME, launch=outcome))
    marked = claim(kube)["metadata"]["labels"]
    assert marked["topology.kubernetes.io/region"] == "us-west-2"
    assert marked["topology.k8s.aws/zone-id"] == "usw2-az1"


@pytest.mark.parametrize(
    ("zone", "region"),
    [("us-west-2a", "us-west-2"), ("us-west-2-lax-1a", "us-west-2"), ("us-east-1-wl1-bos-wlz-1", "us-east-1"),
     ("us-gov-west-1a", "us-gov-west-1"), ("nowhere", "")],
)  # fmt: skip
def test_the_region_of_a_zone(zone: str, region: str) -> None:
    assert region_of_zone(zone) == region


def test_mark_launched_labels_a_windows_node_class_claim_windows_with_its_build(
    launching: LaunchActivities, kube: MemKube
) -> None:
    outcome = launching.launch(ClaimRef(name=NAME))
    as_admin_patch(kube, r.EC2NODECLASS, "default", {"spec": {"amiSelectorTerms": [{"alias": "windows2022@latest"}]}})
    launching.mark_launched(MarkLaunchedInput(name=NAME, launch=outcome))
    labels = claim(kube)["metadata"]["labels"]
    assert labels["kubernetes.io/os"] == "windows"
    assert labels["node.kubernetes.io/windows-build"] == "10.0.20348"


def test_mark_launched_of_a_gone_claim_is_a_no_op(launching: LaunchActivities) -> None:
    launching.mark_launched(MarkLaunchedInput(name="gone", launch=LaunchOutcome(instance_id="i-1")))


def test_launch_failed_says_why_terminates_any_instance_and_deletes_the_claim(
    launching: LaunchActivities, kube: MemKube, cloud: FakeCloudProvider, events: Events
) -> None:
    leftover = launching.launch(ClaimRef(name=NAME))
    launching.launch_failed(LaunchFailedInput(name=NAME, failure="InsufficientCapacity", message="no m5.large"))
    assert events.recorded == [("InsufficientCapacityError", "no m5.large")]
    assert cloud.deleted == [leftover.instance_id]
    with pytest.raises(NotFoundError):
        kube.get(r.NODECLAIM, NAME)


def test_launch_failed_leaves_a_claim_of_the_same_name_and_another_uid_alone(
    launching: LaunchActivities, kube: MemKube, cloud: FakeCloudProvider, events: Events
) -> None:
    launching.launch(ClaimRef(name=NAME))
    launching.launch_failed(LaunchFailedInput(name=NAME, uid="old-uid", failure="LaunchFailed", message="x"))
    assert claim(kube) and cloud.deleted == [] and events.recorded == []


def test_the_launch_request_carries_the_claims_min_values_and_zone_ids(
    launching: LaunchActivities, kube: MemKube, cloud: FakeCloudProvider
) -> None:
    families = {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 2}
    zone_id = {"key": "topology.k8s.aws/zone-id", "operator": "In", "values": ["usw2-az1"]}
    requirements = [*claim(kube)["spec"]["requirements"], families, zone_id]
    as_admin_patch(kube, r.NODECLAIM, NAME, {"spec": {"requirements": requirements}})
    launching.launch(ClaimRef(name=NAME))
    assert cloud.create_calls[-1].min_values == {"karpenter.k8s.aws/instance-family": 2}
    assert cloud.create_calls[-1].zone_ids == ["usw2-az1"]
