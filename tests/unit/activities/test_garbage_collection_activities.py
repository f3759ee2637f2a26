"""The garbage collector's activity (activities.garbage_collection.collector), called directly over MemKube and the
fake cloud: only live instances tagged with a NodeClaim that does not exist, launched long enough ago,
are terminated; anything it cannot judge is left alone, and a failed listing raises."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from activities.garbage_collection.collector import CollectInput, GarbageCollectionActivities
from apis.ec2nodeclass import EC2NodeClass
from cloudprovider.errors import CloudProviderError, InstanceNotFoundError
from cloudprovider.fake import FakeCloudProvider
from cloudprovider.types import TAG_NODECLAIM, TAG_NODEPOOL, instance_id_of
from kube import resources as r
from kube.fake import Events, MemKube, count_lists, watch_cache_of
from tests.unit.activities.claimworld import NAME, NODE, as_admin_patch, uid

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


def test_an_old_instance_nodeflow_launched_without_a_claim_tag_leaks_unless_a_claim_records_it(
    collector: GarbageCollectionActivities, cloud: FakeCloudProvider, kube: MemKube
) -> None:
    cloud.put_running("i-recorded", {TAG_NODEPOOL: "default"}, launch_time=HOUR_AGO)
    as_admin_patch(kube, r.NODECLAIM, NAME, {"status": {"providerID": "aws:///us-west-2a/i-recorded"}})
    cloud.put_running("i-batched-untagged", {TAG_NODEPOOL: "default"}, launch_time=HOUR_AGO)
    cloud.put_running("i-being-tagged", {TAG_NODEPOOL: "default"}, launch_time=datetime.now(UTC).isoformat())
    cloud.put_running("i-foreign", {}, launch_time=HOUR_AGO)

    result = collector.collect(CollectInput(min_age_seconds=120))

    assert cloud.deleted == ["i-batched-untagged"]
    assert [(t.instance_id, t.node_claim) for t in result.terminated] == [("i-batched-untagged", "")]


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


# -- NodeClaims whose instance is gone ---------------------------------------------------------------------


def strand(kube: MemKube, provider_id: str = "aws:///us-west-2a/i-gone", launched: str = HOUR_AGO) -> None:
    """Give the fixture's NodeClaim a provider ID and Launched/Registered conditions."""
    conditions = [
        {"type": "Launched", "status": "True", "lastTransitionTime": launched},
        {"type": "Registered", "status": "True", "lastTransitionTime": launched},
    ]
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"status": {"providerID": provider_id, "conditions": conditions}})


def ready(kube: MemKube, status: str) -> None:
    with kube.as_admin():
        kube.patch(r.NODE, NODE, {"status": {"conditions": [{"type": "Ready", "status": status}]}})


def collector_with_events(kube: MemKube, cloud: FakeCloudProvider) -> tuple[GarbageCollectionActivities, Events]:
    events = Events()
    return GarbageCollectionActivities(kube, cloud, events), events  # type: ignore[arg-type]


def test_a_registered_claim_whose_instance_is_gone_and_node_not_ready_is_deleted_with_an_event(
    kube: MemKube, cloud: FakeCloudProvider
) -> None:
    strand(kube)
    ready(kube, "Unknown")
    collector, events = collector_with_events(kube, cloud)
    result = collector.collect(CollectInput(min_age_seconds=120))
    assert [(c.node_claim, c.instance_id, c.node_name) for c in result.deleted_claims] == [(NAME, "i-gone", NODE)]
    assert f"NodeClaim/{NAME}" in kube.deleted  # with a uid precondition (MemKube refuses one without)
    ((reason, message),) = events.recorded
    assert reason == "InstanceGone"
    assert "i-gone no longer exists" in message and NODE in message


@pytest.mark.parametrize(
    "situation",
    ["instance live", "node ready", "launched just now", "not registered", "no provider id", "being deleted"],
)
def test_a_claim_is_kept_unless_it_is_registered_old_enough_and_both_its_instance_and_node_are_gone(
    kube: MemKube, cloud: FakeCloudProvider, situation: str
) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    strand(kube, launched=now if situation == "launched just now" else HOUR_AGO)
    ready(kube, "True" if situation == "node ready" else "False")
    if situation == "instance live":
        instance(cloud, "i-gone", NAME)
    if situation == "not registered":
        with kube.as_admin():
            kube.patch(r.NODECLAIM, NAME, {"status": {"conditions": [{"type": "Registered", "status": "Unknown"}]}})
    if situation == "no provider id":
        with kube.as_admin():
            kube.patch(r.NODECLAIM, NAME, {"status": {"providerID": None}})
    if situation == "being deleted":
        kube.delete(r.NODECLAIM, NAME, preconditions={"uid": uid(kube)})
        kube.deleted.clear()
    collector, events = collector_with_events(kube, cloud)
    assert collector.collect(CollectInput(min_age_seconds=120)).deleted_claims == []
    assert kube.deleted == [] and events.recorded == []


def test_provider_ids_end_with_the_instance_id() -> None:
    assert instance_id_of("aws:///us-west-2a/i-0abc") == "i-0abc"


def test_stale_launch_templates_are_swept_with_every_node_class_hash_and_a_failure_is_only_reported(
    collector: GarbageCollectionActivities, kube: MemKube, cloud: FakeCloudProvider
) -> None:
    good = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "swept"},
        "spec": {
            "role": "nodes",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
        },
    }
    broken = {**good, "metadata": {"name": "broken"}, "spec": {"amiSelectorTerms": "not a list"}}
    kube.create(r.EC2NODECLASS, good)
    kube.create(r.EC2NODECLASS, broken)
    instance(cloud, "i-leaked", "default-gone")

    collector.collect(CollectInput(min_age_seconds=120))
    swept = cloud.stale_sweeps[0]
    assert (swept["swept"], swept["broken"]) == (EC2NodeClass.model_validate(good).static_hash(), None)

    cloud.fail_next("delete_stale_launch_templates", CloudProviderError("AccessDenied: ec2:DescribeLaunchTemplates"))
    result = collector.collect(CollectInput(min_age_seconds=120))
    assert "AccessDenied" in result.launch_template_error
    assert cloud.deleted == ["i-leaked"]  # the instance collection still ran, in the first round


# -- the leader's survey (activities.garbage_collection.survey) --------------------------------------------------------


def test_a_survey_names_what_a_round_would_act_on_acts_on_nothing_and_finds_nothing_after_the_round(
    kube: MemKube, cloud: FakeCloudProvider
) -> None:
    instance(cloud, "i-own", NAME)
    instance(cloud, "i-leaked", "default-gone")
    instance(cloud, "i-young", "default-gone-too", launch_time=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    strand(kube)  # the fixture's claim says i-gone, which is not live
    ready(kube, "Unknown")
    cloud.stale_templates = ["karpenter.k8s.aws/old"]
    collector, events = collector_with_events(kube, cloud)

    found = collector.survey(CollectInput(min_age_seconds=120))

    assert found == [
        "instance i-leaked: leaked (NodeClaim default-gone does not exist)",
        f"NodeClaim {NAME}: its instance is gone",
        "launch template karpenter.k8s.aws/old: stale",
    ]
    assert (cloud.deleted, kube.deleted, events.recorded, cloud.stale_sweeps) == ([], [], [], [])
    result = collector.collect(CollectInput(min_age_seconds=120))
    assert (cloud.deleted, [c.node_claim for c in result.deleted_claims]) == (["i-leaked"], [NAME])
    assert result.deleted_launch_templates == ["karpenter.k8s.aws/old"]
    assert collector.survey(CollectInput(min_age_seconds=120)) == []


def test_a_survey_names_a_claim_whose_node_vanished(kube: MemKube, cloud: FakeCloudProvider) -> None:
    strand(kube, provider_id="aws:///us-west-2a/i-live")
    instance(cloud, "i-live", NAME)
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"status": {"nodeName": "vanished"}})
    assert GarbageCollectionActivities(kube, cloud).survey(CollectInput()) == [  # type: ignore[arg-type]
        f"NodeClaim {NAME}: its Node vanished is gone"
    ]


def test_a_survey_reads_claims_nodes_and_node_classes_from_the_synced_watch_cache(
    kube: MemKube, cloud: FakeCloudProvider
) -> None:
    strand(kube)
    cache = watch_cache_of(kube)
    read = count_lists(kube)
    assert GarbageCollectionActivities(kube, cloud).survey(CollectInput(), cache)  # type: ignore[arg-type]
    assert read == []
    unsynced = watch_cache_of(kube, listed=())
    GarbageCollectionActivities(kube, cloud).survey(CollectInput(), unsynced)  # type: ignore[arg-type]
    assert {"nodeclaims", "nodes", "ec2nodeclasses"} <= set(read)
