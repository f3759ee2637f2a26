"""NodeClaim activities over an in-memory API and the fake cloud: drift marking, drain steps (with
terminationGracePeriod), expiry and replacement claims."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from activities.models import (
    ClaimRef,
    DrainInput,
    DriftCheckInput,
    FinalizeInput,
    LaunchOutcome,
    MarkLaunchedInput,
    ReplacementInput,
)
from activities.nodeclaim import NodeClaimActivities
from activities.replace import REPLACEMENT_OF_ANNOTATION
from activities.shared_reads import SHARED_READ_TTL_SECONDS
from apis.ec2nodeclass import STATIC_HASH_VERSION, EC2NodeClass
from apis.nodepool import TEMPLATE_HASH_VERSION, NodePool
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.errors import NotFoundError
from tests.unit.activities.memkube import Events, MemKube

POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "a"}},
            "spec": {
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            },
        }
    },
}
NODE_CLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
    },
}


def claim_body(image_id: str = "ami-fake") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": "default-abcde",
            "labels": {"karpenter.sh/nodepool": "default", "team": "a", "karpenter.sh/capacity-type": "on-demand"},
            "annotations": {
                "karpenter.sh/nodepool-hash": NodePool.model_validate(POOL).template_hash(),
                "karpenter.sh/nodepool-hash-version": TEMPLATE_HASH_VERSION,
            },
            "finalizers": ["karpenter.sh/termination"],
        },
        "spec": {
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        },
        "status": {"imageID": image_id, "nodeName": "node-1"},
    }


def pod(name: str, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", **extra.pop("meta", {})}
    return {"metadata": meta, "spec": {"nodeName": "node-1", **extra}, "status": {"phase": "Running"}}


@pytest.fixture
def kube() -> MemKube:
    kube = MemKube()
    kube.create(r.NODEPOOL, POOL)
    kube.create(r.EC2NODECLASS, NODE_CLASS)
    kube.create(r.NODECLAIM, claim_body())
    kube.create(r.NODE, {"metadata": {"name": "node-1"}, "spec": {}})
    return kube


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def acts(kube: MemKube, events: Events) -> NodeClaimActivities:
    return NodeClaimActivities(kube, FakeCloudProvider(), events, "test")  # type: ignore[arg-type]


def condition(kube: MemKube, type_: str) -> dict[str, Any] | None:
    conditions = kube.get(r.NODECLAIM, "default-abcde").get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), None)


def test_a_matching_claim_is_not_drifted(acts: NodeClaimActivities, kube: MemKube) -> None:
    assert not acts.check_drift(DriftCheckInput(name="default-abcde")).drifted
    assert condition(kube, "Drifted") is None


def test_a_changed_template_marks_then_a_reverted_one_clears_drifted(
    acts: NodeClaimActivities, kube: MemKube, events: Events
) -> None:
    now = [0.0]
    acts.shared_reads.clock = lambda: now[0]
    kube.patch(r.NODEPOOL, "default", {"spec": {"template": {"metadata": {"labels": {"team": "b"}}}}})
    result = acts.check_drift(DriftCheckInput(name="default-abcde"))
    assert (result.drifted, result.reason) == (True, "NodePoolDrifted")
    marked = condition(kube, "Drifted")
    assert marked and marked["status"] == "True" and marked["reason"] == "NodePoolDrifted"
    assert "drift check v2" in marked["message"]
    acts.check_drift(DriftCheckInput(name="default-abcde"))
    assert [reason for reason, _ in events.recorded] == ["Drifted"]  # one event, not one per check

    kube.patch(r.NODEPOOL, "default", {"spec": {"template": {"metadata": {"labels": {"team": "a"}}}}})
    assert acts.check_drift(DriftCheckInput(name="default-abcde")).drifted  # the shared NodePool read is recent
    now[0] += SHARED_READ_TTL_SECONDS
    assert not acts.check_drift(DriftCheckInput(name="default-abcde")).drifted
    assert condition(kube, "Drifted") is None


def test_a_claim_stamped_by_karpenter_is_restamped_not_drifted(acts: NodeClaimActivities, kube: MemKube) -> None:
    karpenter_stamp = {"karpenter.sh/nodepool-hash": "6315716386361946539", "karpenter.sh/nodepool-hash-version": "v3"}
    with kube.as_admin():
        kube.patch(r.NODECLAIM, "default-abcde", {"metadata": {"annotations": karpenter_stamp}})
    kube.patch(r.NODEPOOL, "default", {"metadata": {"annotations": {"karpenter.sh/nodepool-hash-version": "v3"}}})

    assert not acts.check_drift(DriftCheckInput(name="default-abcde")).drifted
    annotations = kube.get(r.NODECLAIM, "default-abcde")["metadata"]["annotations"]
    assert annotations["karpenter.sh/nodepool-hash-version"] == TEMPLATE_HASH_VERSION
    assert annotations["karpenter.sh/nodepool-hash"] == NodePool.model_validate(POOL).template_hash()

    acts.shared_reads.ttl = 0  # see the template change at once
    kube.patch(r.NODEPOOL, "default", {"spec": {"template": {"metadata": {"labels": {"team": "b"}}}}})
    assert acts.check_drift(DriftCheckInput(name="default-abcde")).reason == "NodePoolDrifted"


def node_class_annotations(kube: MemKube) -> tuple[str | None, str | None]:
    annotations = kube.get(r.NODECLAIM, "default-abcde")["metadata"].get("annotations") or {}
    return annotations.get("karpenter.k8s.aws/ec2nodeclass-hash"), annotations.get(
        "karpenter.k8s.aws/ec2nodeclass-hash-version"
    )


def test_a_launched_claim_records_its_node_class_hash_and_a_static_change_is_node_class_drift(
    acts: NodeClaimActivities, kube: MemKube
) -> None:
    launch = LaunchOutcome(instance_id="i-1", instance_type="m5.large", zone="us-west-2a", capacity_type="on-demand")
    acts.mark_launched(MarkLaunchedInput(name="default-abcde", launch=launch))
    assert node_class_annotations(kube) == (EC2NodeClass.model_validate(NODE_CLASS).static_hash(), STATIC_HASH_VERSION)
    assert not acts.check_drift(DriftCheckInput(name="default-abcde")).drifted

    acts.shared_reads.ttl = 0  # see each change at once
    kube.patch(r.EC2NODECLASS, "default", {"spec": {"subnetSelectorTerms": [{"id": "subnet-other"}]}})
    assert acts.check_drift(DriftCheckInput(name="default-abcde")).reason != "NodeClassDrift"  # judged by subnet
    kube.patch(r.EC2NODECLASS, "default", {"spec": {"userData": "#!/bin/bash\necho changed"}})
    result = acts.check_drift(DriftCheckInput(name="default-abcde"))
    assert (result.drifted, result.reason) == (True, "NodeClassDrift")


def test_a_claim_without_a_node_class_hash_is_stamped_not_drifted(acts: NodeClaimActivities, kube: MemKube) -> None:
    assert node_class_annotations(kube) == (None, None)  # launched before node class hashes were recorded
    assert not acts.check_drift(DriftCheckInput(name="default-abcde")).drifted
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
    acts: NodeClaimActivities, kube: MemKube, instance_type: str, launched_ago: timedelta, reason: str
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
        kube.patch(r.NODECLAIM, "default-abcde", labelled)
        kube.patch(r.NODECLAIM, "default-abcde", {"status": {"conditions": [launched]}}, subresource="status")
    assert acts.check_drift(DriftCheckInput(name="default-abcde")).reason == reason


def test_an_image_the_node_class_no_longer_resolves_is_ami_drift(acts: NodeClaimActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODECLAIM, "default-abcde", {"status": {"imageID": "ami-old"}}, subresource="status")
    result = acts.check_drift(DriftCheckInput(name="default-abcde"))
    assert (result.drifted, result.reason) == (True, "AMIDrift")
    assert "ami-old" in result.message


def test_a_gone_claim_is_reported(acts: NodeClaimActivities) -> None:
    assert not acts.check_drift(DriftCheckInput(name="nope")).claim_exists


def test_a_running_check_reports_drift_while_the_claim_and_its_node_live(
    acts: NodeClaimActivities, kube: MemKube
) -> None:
    with kube.as_admin():
        kube.patch(r.NODECLAIM, "default-abcde", {"status": {"imageID": "ami-old"}}, subresource="status")
    check = acts.running_check(DriftCheckInput(name="default-abcde", node_name="node-1"))
    assert not check.gone
    assert (check.drift.drifted, check.drift.reason) == (True, "AMIDrift")


def test_a_running_check_skips_drift_once_the_node_is_gone(acts: NodeClaimActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.patch(r.NODECLAIM, "default-abcde", {"status": {"imageID": "ami-old"}}, subresource="status")
    with kube.as_admin():
        kube.delete(r.NODE, "node-1")
    check = acts.running_check(DriftCheckInput(name="default-abcde", node_name="node-1"))
    assert check.gone and not check.state.node_exists
    assert not check.drift.drifted and condition(kube, "Drifted") is None


def test_a_drain_step_evicts_waits_on_pdbs_and_holds_do_not_disrupt(acts: NodeClaimActivities, kube: MemKube) -> None:
    kube.create(r.POD, pod("web-1"))
    kube.create(r.POD, pod("guarded"))
    kube.create(r.POD, pod("precious", meta={"annotations": {"karpenter.sh/do-not-disrupt": "true"}}))
    kube.refuse_eviction.add("guarded")

    progress = acts.drain_step(DrainInput(name="default-abcde", node_name="node-1"))
    assert kube.evicted == ["web-1"]
    assert progress.remaining == 2
    assert "1 refused by disruption budgets, 1 held by do-not-disrupt" in progress.message
    node = kube.get(r.NODE, "node-1")
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in node["spec"]["taints"]
    drained = condition(kube, "Drained")
    assert drained and drained["status"] == "False"

    progress = acts.drain_step(DrainInput(name="default-abcde", node_name="node-1", force=True))
    assert progress.remaining == 0
    drained = condition(kube, "Drained")
    assert drained and drained["status"] == "True"


def termination_timestamp(kube: MemKube) -> str | None:
    annotations = kube.get(r.NODECLAIM, "default-abcde")["metadata"].get("annotations") or {}
    return annotations.get("karpenter.sh/nodeclaim-termination-timestamp")


def test_a_drain_step_deletes_each_pod_at_the_deadline_minus_its_grace_period(
    acts: NodeClaimActivities, kube: MemKube, events: Events
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

    progress = acts.drain_step(DrainInput(name="default-abcde", node_name="node-1", deadline=deadline))
    assert kube.deleted == ["Pod/slow", "Pod/web"]  # web: evicted (deleted through eviction)
    assert kube.evicted == ["web"]
    assert (progress.remaining, progress.evicted, progress.deleted, progress.blocked_by_pdb) == (1, 1, 1, 1)
    assert "1 deleted for terminationGracePeriod" in progress.message
    assert termination_timestamp(kube) == deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [reason for reason, _ in events.recorded] == ["TerminationGracePeriodExpiring", "Disrupted"]
    assert "600s" in events.recorded[1][1] and "do-not-disrupt" in events.recorded[1][1]
    assert 110 <= kube.grace_periods["Pod/slow"] <= 120  # 600 s would outlast the node: cut to what is left
    assert "cut to" in events.recorded[1][1]

    # later the do-not-disrupt pod's 10 s are all that is left: deleted; the annotation is written once
    later = datetime.now(UTC) + timedelta(seconds=5)
    progress = acts.drain_step(DrainInput(name="default-abcde", node_name="node-1", deadline=later))
    assert kube.deleted[-1] == "Pod/precious"
    assert 1 <= kube.grace_periods["Pod/precious"] <= 5
    assert progress.remaining == 0 and progress.deleted == 1
    assert termination_timestamp(kube) == deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [reason for reason, _ in events.recorded].count("TerminationGracePeriodExpiring") == 1
    drained = condition(kube, "Drained")
    assert drained and drained["status"] == "True"


def test_a_pod_gone_before_its_grace_period_delete_is_fine(
    acts: NodeClaimActivities, kube: MemKube, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    kube.create(r.POD, pod("slow", terminationGracePeriodSeconds=600))

    def already_gone(
        resource: r.Resource, name: str, namespace: str | None = None, grace_period_seconds: int | None = None
    ) -> None:
        raise NotFoundError(f"{resource.kind} {name} not found")

    monkeypatch.setattr(kube, "delete", already_gone)
    deadline = datetime.now(UTC) + timedelta(minutes=1)
    progress = acts.drain_step(DrainInput(name="default-abcde", node_name="node-1", deadline=deadline))
    assert progress.deleted == 0
    assert [reason for reason, _ in events.recorded] == ["TerminationGracePeriodExpiring"]


def test_a_drain_step_without_a_deadline_leaves_the_claim_unannotated(acts: NodeClaimActivities, kube: MemKube) -> None:
    kube.create(r.POD, pod("slow", terminationGracePeriodSeconds=600))
    acts.drain_step(DrainInput(name="default-abcde", node_name="node-1"))
    assert kube.evicted == ["slow"]
    assert termination_timestamp(kube) is None


def test_begin_termination_of_an_expired_claim_sets_expired_first(acts: NodeClaimActivities, kube: MemKube) -> None:
    acts.begin_termination(FinalizeInput(name="default-abcde", reason="expired after 720h", expired=True))
    expired = condition(kube, "Expired")
    assert expired and (expired["status"], expired["reason"]) == ("True", "Expired")
    assert "720h" in expired["message"]
    assert kube.get(r.NODECLAIM, "default-abcde")["metadata"].get("deletionTimestamp")


def test_a_replacement_is_created_once_and_reported_until_initialized(acts: NodeClaimActivities, kube: MemKube) -> None:
    first = acts.create_replacement(ReplacementInput(name="default-abcde", attempt=1))
    again = acts.create_replacement(ReplacementInput(name="default-abcde", attempt=1))
    assert first.name == again.name and first.name.startswith("default-")
    created = kube.get(r.NODECLAIM, first.name)
    assert created["metadata"]["annotations"][REPLACEMENT_OF_ANNOTATION] == "default-abcde"
    assert created["metadata"]["labels"] == {"karpenter.sh/nodepool": "default", "team": "a"}
    assert (first.from_template, first.expire_after) == (True, "720h")  # the NodePool's template, read now

    assert not acts.replacement_state(ClaimRef(name=first.name)).initialized
    initialized = {
        "type": "Initialized",
        "status": "True",
        "reason": "Initialized",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    with kube.as_admin():
        kube.patch(r.NODECLAIM, first.name, {"status": {"conditions": [initialized]}}, subresource="status")
    assert acts.replacement_state(ClaimRef(name=first.name)).initialized
    assert acts.replacement_state(ClaimRef(name="gone")).gone


def test_a_replacement_of_a_claim_whose_nodepool_is_gone_copies_the_original(
    acts: NodeClaimActivities, kube: MemKube
) -> None:
    kube.delete(r.NODEPOOL, "default")
    result = acts.create_replacement(ReplacementInput(name="default-abcde", attempt=1))
    assert result.name and not result.from_template
    annotations = kube.get(r.NODECLAIM, result.name)["metadata"]["annotations"]
    assert annotations["karpenter.sh/nodepool-hash-version"] == TEMPLATE_HASH_VERSION  # the original's


def test_no_replacement_for_a_claim_being_deleted(acts: NodeClaimActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.delete(r.NODECLAIM, "default-abcde")
    result = acts.create_replacement(ReplacementInput(name="default-abcde", attempt=1))
    assert result.name == "" and "being deleted" in result.message
