"""The running phase's activities (activities.nodeclaim.running), each called directly over MemKube and the fake
cloud: the running check's liveness and drift marking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from activities.nodeclaim.launch import LaunchActivities, LaunchOutcome, MarkLaunchedInput
from activities.nodeclaim.running import DriftCheckInput, DriftResult, RunningActivities
from apis.ec2nodeclass import STATIC_HASH_VERSION, EC2NodeClass
from apis.nodepool import TEMPLATE_HASH_VERSION, NodePool
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.fake import Events, MemKube
from tests.unit.activities.claimworld import NAME, NODE, NODE_CLASS, POOL, condition


@pytest.fixture
def running(kube: MemKube, cloud: FakeCloudProvider, events: Events) -> RunningActivities:
    return RunningActivities(kube, cloud, events, "test")  # type: ignore[arg-type]


@pytest.fixture
def launching(kube: MemKube, cloud: FakeCloudProvider, events: Events) -> LaunchActivities:
    return LaunchActivities(kube, cloud, events, "test")  # type: ignore[arg-type]


def drift(running: RunningActivities) -> DriftResult:
    """The drift half of a running check of the test's claim and node."""
    return running.running_check(DriftCheckInput(name=NAME, node_name=NODE)).drift


def test_a_live_claim_and_node_are_not_gone(running: RunningActivities) -> None:
    liveness = running.running_check(DriftCheckInput(name=NAME, node_name=NODE)).liveness
    assert liveness.exists and liveness.node_exists and not liveness.gone


def test_a_deleting_claim_or_a_gone_node_is_gone(running: RunningActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.delete(r.NODE, NODE)
    assert not running.running_check(DriftCheckInput(name=NAME, node_name=NODE)).liveness.node_exists
    with kube.as_admin():
        kube.delete(r.NODECLAIM, NAME)  # its finalizer keeps it, deleting
    liveness = running.running_check(DriftCheckInput(name=NAME)).liveness
    assert liveness.exists and liveness.deleting and liveness.gone
    assert not running.running_check(DriftCheckInput(name=NAME, uid="another-uid")).liveness.exists


def test_a_matching_claim_is_not_drifted(running: RunningActivities, kube: MemKube) -> None:
    assert not drift(running).drifted
    assert condition(kube, "Drifted") is None


def test_a_changed_template_marks_then_a_reverted_one_clears_drifted(
    running: RunningActivities, kube: MemKube, events: Events
) -> None:
    kube.patch(r.NODEPOOL, "default", {"spec": {"template": {"metadata": {"labels": {"team": "b"}}}}})
    result = drift(running)
    assert (result.drifted, result.reason) == (True, "NodePoolDrifted")
    marked = condition(kube, "Drifted")
    assert marked and marked["status"] == "True" and marked["reason"] == "NodePoolDrifted"
    assert "drift check v3" in marked["message"]
    drift(running)
    assert [reason for reason, _ in events.recorded] == ["Drifted"]  # one event, not one per check

    kube.patch(r.NODEPOOL, "default", {"spec": {"template": {"metadata": {"labels": {"team": "a"}}}}})
    assert not drift(running).drifted  # read fresh: the check runs because something changed
    assert condition(kube, "Drifted") is None


def test_a_claim_stamped_by_karpenter_is_restamped_not_drifted(running: RunningActivities, kube: MemKube) -> None:
    karpenter_stamp = {"karpenter.sh/nodepool-hash": "6315716386361946539", "karpenter.sh/nodepool-hash-version": "v3"}
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"metadata": {"annotations": karpenter_stamp}})
    kube.patch(r.NODEPOOL, "default", {"metadata": {"annotations": {"karpenter.sh/nodepool-hash-version": "v3"}}})

    assert not drift(running).drifted
    annotations = kube.get(r.NODECLAIM, NAME)["metadata"]["annotations"]
    assert annotations["karpenter.sh/nodepool-hash-version"] == TEMPLATE_HASH_VERSION
    assert annotations["karpenter.sh/nodepool-hash"] == NodePool.model_validate(POOL).template_hash()

    kube.patch(r.NODEPOOL, "default", {"spec": {"template": {"metadata": {"labels": {"team": "b"}}}}})
    assert drift(running).reason == "NodePoolDrifted"


def node_class_annotations(kube: MemKube) -> tuple[str | None, str | None]:
    annotations = kube.get(r.NODECLAIM, NAME)["metadata"].get("annotations") or {}
    return annotations.get("karpenter.k8s.aws/ec2nodeclass-hash"), annotations.get(
        "karpenter.k8s.aws/ec2nodeclass-hash-version"
    )


def test_a_launched_claim_records_its_node_class_hash_and_a_static_change_is_node_class_drift(
    running: RunningActivities, launching: LaunchActivities, kube: MemKube
) -> None:
    launch = LaunchOutcome(instance_id="i-1", instance_type="m5.large", zone="us-west-2a", capacity_type="on-demand")
    launching.mark_launched(MarkLaunchedInput(name=NAME, launch=launch))
    assert node_class_annotations(kube) == (EC2NodeClass.model_validate(NODE_CLASS).static_hash(), STATIC_HASH_VERSION)
    assert not drift(running).drifted

    kube.patch(r.EC2NODECLASS, "default", {"spec": {"subnetSelectorTerms": [{"id": "subnet-other"}]}})
    assert drift(running).reason != "NodeClassDrift"  # judged by subnet
    kube.patch(r.EC2NODECLASS, "default", {"spec": {"userData": "#!/bin/bash\necho changed"}})
    result = drift(running)
    assert (result.drifted, result.reason) == (True, "NodeClassDrift")


def test_a_claim_without_a_node_class_hash_is_stamped_not_drifted(running: RunningActivities, kube: MemKube) -> None:
    assert node_class_annotations(kube) == (None, None)  # launched before node class hashes were recorded
    assert not drift(running).drifted
    assert node_class_annotations(kube)[1] == STATIC_HASH_VERSION


@pytest.mark.parametrize(
    ("instance_type", "launched_ago", "reason"),
    [
        ("x9.retired", timedelta(hours=2), "InstanceTypeNotFound"),
        ("x9.retired", timedelta(minutes=30), ""),  # too recent to judge, as in Karpenter
        ("m5.large", timedelta(hours=2), ""),
    ],
)
def test_an_instance_type_the_node_class_no_longer_offers_is_drift_after_an_hour(
    running: RunningActivities, kube: MemKube, instance_type: str, launched_ago: timedelta, reason: str
) -> None:
    launched_at = (datetime.now(UTC) - launched_ago).strftime("%Y-%m-%dT%H:%M:%SZ")
    launched = {
        "type": "Launched",
        "status": "True",
        "reason": "Launched",
        "message": "",
        "lastTransitionTime": launched_at,
    }
    with kube.as_admin():
        labelled = {"metadata": {"labels": {"node.kubernetes.io/instance-type": instance_type}}}
        kube.patch(r.NODECLAIM, NAME, labelled)
        kube.patch(r.NODECLAIM, NAME, {"status": {"conditions": [launched]}}, subresource="status")
    assert drift(running).reason == reason


def test_an_image_the_node_class_no_longer_resolves_is_ami_drift(running: RunningActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"status": {"imageID": "ami-old"}}, subresource="status")
    result = drift(running)
    assert (result.drifted, result.reason) == (True, "AMIDrift")
    assert "ami-old" in result.message


def test_a_gone_claim_is_reported_gone_without_a_drift_check(running: RunningActivities) -> None:
    check = running.running_check(DriftCheckInput(name="nope"))
    assert check.gone and not check.liveness.exists and not check.drift.drifted


def test_a_running_check_reports_drift_while_the_claim_and_its_node_live(
    running: RunningActivities, kube: MemKube
) -> None:
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"status": {"imageID": "ami-old"}}, subresource="status")
    check = running.running_check(DriftCheckInput(name=NAME, node_name=NODE))
    assert not check.gone
    assert (check.drift.drifted, check.drift.reason) == (True, "AMIDrift")


def test_a_running_check_skips_drift_once_the_node_is_gone(running: RunningActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"status": {"imageID": "ami-old"}}, subresource="status")
    with kube.as_admin():
        kube.delete(r.NODE, NODE)
    check = running.running_check(DriftCheckInput(name=NAME, node_name=NODE))
    assert check.gone and not check.liveness.node_exists
    assert not check.drift.drifted and condition(kube, "Drifted") is None
