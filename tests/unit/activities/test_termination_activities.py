"""The termination phase's activities (activities.nodeclaim.termination), each called directly over MemKube and the
fake cloud: begin_termination, drain steps (with terminationGracePeriod), terminate_instance, finalize."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from activities.nodeclaim.models import ClaimIdentity
from activities.nodeclaim.termination import BeginTerminationInput, DrainInput, TerminateInput, TerminationActivities
from cloudprovider.fake import FakeCloudProvider
from cloudprovider.types import TAG_NODECLAIM, Instance
from kube import resources as r
from kube.errors import ForbiddenError, NotFoundError
from kube.fake import Events, MemKube
from tests.unit.activities.claimworld import NAME, NODE, claim, condition, pod


@pytest.fixture
def termination(kube: MemKube, cloud: FakeCloudProvider, events: Events) -> TerminationActivities:
    return TerminationActivities(kube, cloud, events, "test")  # type: ignore[arg-type]


def instance(cloud: FakeCloudProvider, instance_id: str, node_claim: str = NAME) -> Instance:
    return cloud.put_running(instance_id, {TAG_NODECLAIM: node_claim})


def test_a_drain_records_evicted_on_each_pod_and_failed_draining_on_the_node_once_a_window(
    termination: TerminationActivities, kube: MemKube, events: Events
) -> None:
    kube.create(r.POD, pod("web-1"))
    kube.create(r.POD, pod("guarded"))
    kube.refuse_eviction.add("guarded")
    termination.drain_step(DrainInput(name=NAME, node_name=NODE))
    termination.drain_step(DrainInput(name=NAME, node_name=NODE))  # still refused: no second FailedDraining
    recorded = list(zip(events.types, events.recorded, [o["metadata"]["name"] for o in events.involved], strict=True))
    assert recorded == [
        ("Normal", ("Evicted", "Evicted pod"), "web-1"),
        ("Warning", ("FailedDraining", "Failed to drain node, 1 pods remaining, 1 refused by disruption budgets, "
                     "0 held by do-not-disrupt"), NODE),
    ]  # fmt: skip


def test_a_drain_step_evicts_waits_on_pdbs_and_holds_do_not_disrupt(
    termination: TerminationActivities, kube: MemKube
) -> None:
    kube.create(r.POD, pod("web-1"))
    kube.create(r.POD, pod("guarded"))
    kube.create(r.POD, pod("precious", meta={"annotations": {"karpenter.sh/do-not-disrupt": "true"}}))
    kube.refuse_eviction.add("guarded")

    progress = termination.drain_step(DrainInput(name=NAME, node_name=NODE))
    assert kube.evicted == ["web-1"]
    assert progress.remaining == 2
    assert "1 refused by disruption budgets, 1 held by do-not-disrupt" in progress.message
    node = kube.get(r.NODE, NODE)
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert node["metadata"]["labels"]["node.kubernetes.io/exclude-from-external-load-balancers"] == "karpenter"
    drained = condition(kube, "Drained")
    assert drained and drained["status"] == "False"

    progress = termination.drain_step(DrainInput(name=NAME, node_name=NODE, force=True))
    assert progress.remaining == 0
    drained = condition(kube, "Drained")
    assert drained and drained["status"] == "True"


def termination_timestamp(kube: MemKube) -> str | None:
    annotations = claim(kube)["metadata"].get("annotations") or {}
    return annotations.get("karpenter.sh/nodeclaim-termination-timestamp")


def attachment(name: str, volume: str, node: str = NODE) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {"attacher": "ebs.csi.aws.com", "nodeName": node, "source": {"persistentVolumeName": volume}},
    }


def test_a_drained_node_waits_for_its_drained_pods_volumes_to_detach(
    termination: TerminationActivities, kube: MemKube, events: Events
) -> None:
    with kube.as_admin():
        kube.create(r.VOLUMEATTACHMENT, attachment("csi-data", "pv-data"))
        kube.create(r.VOLUMEATTACHMENT, attachment("csi-other-node", "pv-x", node="another-node"))
    progress = termination.drain_step(DrainInput(name=NAME, node_name=NODE))  # no pods: drained at once
    assert progress.remaining == 1 and "csi-data" in progress.message
    detached = condition(kube, "VolumesDetached")
    assert detached and (detached["status"], detached["reason"]) == ("False", "AwaitingVolumeDetachment")
    assert condition(kube, "Drained")["status"] == "True"  # type: ignore[index]
    termination.drain_step(DrainInput(name=NAME, node_name=NODE))
    assert [e for e in events.recorded if e[0] == "AwaitingVolumeDetachment"] == [
        ("AwaitingVolumeDetachment", "awaiting deletion of 1 VolumeAttachments (csi-data)")
    ], "one event when the wait begins"
    assert events.types[[e[0] for e in events.recorded].index("AwaitingVolumeDetachment")] == "Warning"
    with kube.as_admin():
        kube.delete(r.VOLUMEATTACHMENT, "csi-data")
    assert termination.drain_step(DrainInput(name=NAME, node_name=NODE)).remaining == 0
    assert condition(kube, "VolumesDetached")["status"] == "True"  # type: ignore[index]


def test_a_worker_not_allowed_to_list_volume_attachments_still_terminates(
    termination: TerminationActivities, kube: MemKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_list = kube.list

    def forbidden(resource: r.Resource, *args: object, **kwargs: object) -> object:
        if resource is r.VOLUMEATTACHMENT:
            raise ForbiddenError("volumeattachments is forbidden")
        return real_list(resource, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(kube, "list", forbidden)
    assert termination.drain_step(DrainInput(name=NAME, node_name=NODE)).remaining == 0


def test_the_volume_wait_ends_with_the_termination_grace_period(
    termination: TerminationActivities, kube: MemKube
) -> None:
    with kube.as_admin():
        kube.create(r.VOLUMEATTACHMENT, attachment("csi-stuck", "pv-stuck"))
    assert termination.drain_step(DrainInput(name=NAME, node_name=NODE, force=True)).remaining == 0
    detached = condition(kube, "VolumesDetached")
    assert detached and (detached["status"], detached["reason"]) == ("False", "TerminationGracePeriodElapsed")


def test_a_drain_step_deletes_each_pod_at_the_deadline_minus_its_grace_period(
    termination: TerminationActivities, kube: MemKube, events: Events
) -> None:
    kube.create(r.POD, pod("slow", terminationGracePeriodSeconds=600))
    kube.create(r.POD, pod("web"))
    kube.create(
        r.POD,
        pod(
            "precious", terminationGracePeriodSeconds=10, meta={"annotations": {"karpenter.sh/do-not-disrupt": "true"}}
        ),
    )
    kube.refuse_eviction.add("slow")  # a PDB does not save a pod whose time has come
    deadline = datetime.now(UTC) + timedelta(minutes=2)

    progress = termination.drain_step(DrainInput(name=NAME, node_name=NODE, deadline=deadline))
    assert kube.deleted == ["Pod/slow", "Pod/web"]  # web: evicted (deleted through eviction)
    assert kube.evicted == ["web"]
    assert (progress.remaining, progress.evicted, progress.deleted, progress.blocked_by_pdb) == (1, 1, 1, 1)
    assert "1 deleted for terminationGracePeriod" in progress.message
    assert termination_timestamp(kube) == deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [reason for reason, _ in events.recorded] == [
        "TerminationGracePeriodExpiring", "Disrupted", "Evicted", "FailedDraining"]  # fmt: skip
    assert "600s" in events.recorded[1][1] and "do-not-disrupt" in events.recorded[1][1]
    assert 110 <= kube.grace_periods["Pod/slow"] <= 120  # 600 s would outlast the node: cut to what is left
    assert "cut to" in events.recorded[1][1]

    # later the do-not-disrupt pod's 10 s are all that is left: deleted; the annotation is written once
    later = datetime.now(UTC) + timedelta(seconds=5)
    progress = termination.drain_step(DrainInput(name=NAME, node_name=NODE, deadline=later))
    assert kube.deleted[-1] == "Pod/precious"
    assert 1 <= kube.grace_periods["Pod/precious"] <= 5
    assert progress.remaining == 0 and progress.deleted == 1
    assert termination_timestamp(kube) == deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [reason for reason, _ in events.recorded].count("TerminationGracePeriodExpiring") == 1
    drained = condition(kube, "Drained")
    assert drained and drained["status"] == "True"


def test_a_pod_gone_before_its_grace_period_delete_is_fine(
    termination: TerminationActivities, kube: MemKube, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    kube.create(r.POD, pod("slow", terminationGracePeriodSeconds=600))

    def already_gone(
        resource: r.Resource, name: str, namespace: str | None = None, grace_period_seconds: int | None = None
    ) -> None:
        raise NotFoundError(f"{resource.kind} {name} not found")

    monkeypatch.setattr(kube, "delete", already_gone)
    deadline = datetime.now(UTC) + timedelta(minutes=1)
    progress = termination.drain_step(DrainInput(name=NAME, node_name=NODE, deadline=deadline))
    assert progress.deleted == 0
    assert [reason for reason, _ in events.recorded] == ["TerminationGracePeriodExpiring", "FailedDraining"]


def test_a_drain_step_without_a_deadline_leaves_the_claim_unannotated(
    termination: TerminationActivities, kube: MemKube
) -> None:
    kube.create(r.POD, pod("slow", terminationGracePeriodSeconds=600))
    termination.drain_step(DrainInput(name=NAME, node_name=NODE))
    assert kube.evicted == ["slow"]
    assert termination_timestamp(kube) is None


def test_begin_termination_of_an_expired_claim_sets_expired_first(
    termination: TerminationActivities, kube: MemKube
) -> None:
    termination.begin_termination(BeginTerminationInput(name=NAME, reason="expired after 720h", expired=True))
    expired = condition(kube, "Expired")
    assert expired and (expired["status"], expired["reason"]) == ("True", "Expired")
    assert "720h" in expired["message"]
    assert claim(kube)["metadata"].get("deletionTimestamp")


def test_begin_termination_records_why_once_and_leaves_a_deleting_claim_alone(
    termination: TerminationActivities, kube: MemKube, events: Events
) -> None:
    termination.begin_termination(BeginTerminationInput(name=NAME, reason="manual drain"))
    termination.begin_termination(BeginTerminationInput(name=NAME, reason="manual drain"))
    assert events.recorded == [("DisruptionTerminating", "manual drain")]
    assert claim(kube)["metadata"]["finalizers"] == ["karpenter.sh/termination"]  # kept until finalize
    assert condition(kube, "Expired") is None


def test_terminate_instance_terminates_the_claims_instance_until_it_is_gone(
    termination: TerminationActivities, kube: MemKube, cloud: FakeCloudProvider
) -> None:
    instance(cloud, "i-1")
    assert not termination.terminate_instance(TerminateInput(name=NAME, instance_id="i-1")).gone
    assert cloud.deleted == ["i-1"]
    terminating = condition(kube, "InstanceTerminating")
    assert terminating and (terminating["status"], terminating["message"]) == ("True", "i-1")
    cloud.terminate_now("i-1")
    assert termination.terminate_instance(TerminateInput(name=NAME, instance_id="i-1")).gone


def test_terminate_instance_without_an_id_finds_the_instance_tagged_for_the_claim(
    termination: TerminationActivities, cloud: FakeCloudProvider
) -> None:
    instance(cloud, "i-2")
    assert not termination.terminate_instance(TerminateInput(name=NAME, instance_id="")).gone
    assert cloud.deleted == ["i-2"]
    assert termination.terminate_instance(TerminateInput(name="no-instance", instance_id="")).gone


def test_terminate_instance_leaves_an_instance_tagged_for_another_claim(
    termination: TerminationActivities, cloud: FakeCloudProvider
) -> None:
    instance(cloud, "i-3", node_claim="another-claim")
    result = termination.terminate_instance(TerminateInput(name=NAME, instance_id="i-3"))
    assert result.gone and "tagged for another-claim" in result.message
    assert cloud.deleted == []


def test_finalize_deletes_the_node_and_lets_the_claim_go(termination: TerminationActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODE, NODE, {"metadata": {"finalizers": ["karpenter.sh/termination"]}})
    termination.finalize(ClaimIdentity(name=NAME, node_name=NODE))
    for resource, name in ((r.NODE, NODE), (r.NODECLAIM, NAME)):
        with pytest.raises(NotFoundError):
            kube.get(resource, name)


def test_finalize_before_registration_only_lets_the_claim_go(termination: TerminationActivities, kube: MemKube) -> None:
    termination.finalize(ClaimIdentity(name=NAME))
    with pytest.raises(NotFoundError):
        kube.get(r.NODECLAIM, NAME)
    assert kube.get(r.NODE, NODE)  # not the claim's Node: it never registered


def pool_condition(kube: MemKube, type_: str) -> dict[str, str] | None:
    conditions = kube.get(r.NODEPOOL, "default").get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), None)


def test_a_claim_that_did_not_register_marks_its_pool_unhealthy(
    termination: TerminationActivities, kube: MemKube
) -> None:
    reason = "the node did not register within 15m"
    termination.begin_termination(BeginTerminationInput(name=NAME, reason=reason, registration_failed=True))
    health = pool_condition(kube, "NodeRegistrationHealthy")
    assert health and (health["status"], health["reason"]) == ("False", "RegistrationFailed")
    assert health["message"] == f"NodeClaim {NAME}: {reason}"


def test_any_other_termination_leaves_the_pools_registration_health_alone(
    termination: TerminationActivities, kube: MemKube
) -> None:
    termination.begin_termination(BeginTerminationInput(name=NAME, reason="manual drain"))
    assert pool_condition(kube, "NodeRegistrationHealthy") is None
