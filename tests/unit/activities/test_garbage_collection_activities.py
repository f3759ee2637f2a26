"""The garbage collector's activity (activities.garbage_collection), called directly over MemKube and the
fake cloud: only live instances tagged with a NodeClaim that does not exist, launched long enough ago,
are terminated; anything it cannot judge is left alone, and a failed listing raises."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from activities.garbage_collection import CollectInput, GarbageCollectionActivities
from cloudprovider.errors import CloudProviderError, InstanceNotFoundError
from cloudprovider.fake import FakeCloudProvider
from cloudprovider.types import TAG_NODECLAIM
from tests.unit.activities.claimworld import NAME
from tests.unit.activities.memkube import MemKube

HOUR_AGO = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def instance(cloud: FakeCloudProvider, instance_id: str, claim: str | None, launch_time: str = HOUR_AGO) -> None:
    cloud.put_running(instance_id, {TAG_NODECLAIM: claim} if claim else {}, launch_time=launch_time)


@pytest.fixture
def collector(kube: MemKube, cloud: FakeCloudProvider) -> GarbageCollectionActivities:
    return GarbageCollectionActivities(kube, cloud)  # type: ignore[arg-type]


def test_only_an_old_instance_of_a_claim_that_does_not_exist_is_terminated(
    collector: GarbageCollectionActivities, cloud: FakeCloudProvider
) -> None:
    instance(cloud, "i-own", NAME)  # its NodeClaim exists
    instance(cloud, "i-leaked", "default-gone")
    instance(cloud, "i-young", "default-gone-too", launch_time=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    instance(cloud, "i-untagged", None)  # not a NodeClaim's instance: never touched
    instance(cloud, "i-unknown-age", "default-gone-three", launch_time="")

    result = collector.collect(CollectInput(min_age_seconds=120))

    assert cloud.deleted == ["i-leaked"]
    assert [(t.instance_id, t.node_claim) for t in result.terminated] == [("i-leaked", "default-gone")]
    assert (result.checked, result.too_young) == (5, 2)


def test_an_instance_terminated_meanwhile_is_not_reported(
    collector: GarbageCollectionActivities, cloud: FakeCloudProvider
) -> None:
    instance(cloud, "i-leaked", "default-gone")
    cloud.fail_next("delete", InstanceNotFoundError("i-leaked is terminated"))
    assert collector.collect(CollectInput(min_age_seconds=0)).terminated == []


def test_a_failed_listing_raises_rather_than_meaning_no_instances(
    collector: GarbageCollectionActivities, cloud: FakeCloudProvider
) -> None:
    instance(cloud, "i-leaked", "default-gone")
    cloud.fail_next("list", CloudProviderError("DescribeInstances failed", retryable=True))
    with pytest.raises(CloudProviderError):
        collector.collect(CollectInput(min_age_seconds=0))
    assert cloud.deleted == []
