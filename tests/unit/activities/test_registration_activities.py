"""The registration phase's activities (activities.nodeclaim.registration), each called directly over MemKube:
register, and the find_node and register_node it is made of."""

from __future__ import annotations

import pytest

from activities.nodeclaim.models import ClaimIdentity
from activities.nodeclaim.registration import FindNodeInput, RegistrationActivities
from activities.nodeclaim.translate import sync_node
from apis.nodeclaim import NodeClaim
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.fake import Events, MemKube, count_lists
from kube.node_directory import NodeDirectory
from tests.unit.activities.claimworld import NAME, NODE, as_admin_patch, claim, condition, uid

PROVIDER_ID = "aws:///us-west-2a/i-0123"


@pytest.fixture
def registration(kube: MemKube, cloud: FakeCloudProvider, events: Events) -> RegistrationActivities:
    return RegistrationActivities(kube, cloud, events, "test")  # type: ignore[arg-type]


def test_find_node_waits_until_a_node_has_the_instances_provider_id(
    registration: RegistrationActivities, kube: MemKube
) -> None:
    check = FindNodeInput(name=NAME, provider_id=PROVIDER_ID)
    assert registration.find_node(check).node_name == ""
    waiting = condition(kube, "Registered")
    assert waiting is not None and (waiting["status"], waiting["reason"]) == ("Unknown", "NodeNotFound")
    assert waiting["message"] == f"Node not registered with cluster: waiting for a Node with providerID {PROVIDER_ID}"
    version = claim(kube)["metadata"]["resourceVersion"]
    registration.find_node(check)
    assert claim(kube)["metadata"]["resourceVersion"] == version, "an unchanged wait is not written again"
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": PROVIDER_ID}})
    found = registration.find_node(check)
    assert (found.node_name, found.node_uid, found.claim_gone) == (NODE, uid(kube, r.NODE, NODE), False)


def test_register_finds_and_registers_the_node_and_checks_its_initialization_once(
    registration: RegistrationActivities, kube: MemKube
) -> None:
    check = FindNodeInput(name=NAME, provider_id=PROVIDER_ID)
    waiting = registration.register(check)
    assert (waiting.node_name, waiting.initialization) == ("", None)
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": PROVIDER_ID}})
    found = registration.register(check)
    assert found.node_name == NODE and claim(kube)["status"]["nodeName"] == NODE
    assert found.initialization is not None and not found.initialization.initialized
    assert found.initialization.waiting_for  # the Node is not Ready yet


def test_find_node_of_a_gone_claim_says_so(registration: RegistrationActivities) -> None:
    assert registration.find_node(FindNodeInput(name="gone", provider_id=PROVIDER_ID)).claim_gone
    assert registration.find_node(FindNodeInput(name=NAME, uid="another-uid", provider_id=PROVIDER_ID)).claim_gone


def test_register_node_syncs_the_claim_onto_its_node(registration: RegistrationActivities, kube: MemKube) -> None:
    taint = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": PROVIDER_ID, "taints": [taint]}})
    registration.register_node(
        ClaimIdentity(name=NAME, provider_id=PROVIDER_ID, node_name=NODE, node_uid=uid(kube, r.NODE, NODE))
    )
    node = kube.get(r.NODE, NODE)
    assert node["metadata"]["labels"]["karpenter.sh/registered"] == "true"
    assert node["metadata"]["labels"]["team"] == "a"
    assert "karpenter.sh/termination" in node["metadata"]["finalizers"]
    assert taint not in node["spec"]["taints"]
    registered = condition(kube, "Registered")
    assert registered and registered["status"] == "True"
    assert claim(kube)["status"]["nodeName"] == NODE


def _claim_with_taints() -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": NAME},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
                "startupTaints": [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoSchedule"}],
            },
        }
    )


def _taint_keys(node: dict[str, object]) -> list[str]:
    return [t["key"] for t in node["spec"]["taints"]]  # type: ignore[index]


def test_the_first_registration_adds_the_claims_taints_and_startup_taints_and_later_ones_only_its_taints() -> None:
    unregistered = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
    node: dict[str, object] = {"metadata": {"name": NODE}, "spec": {"taints": [unregistered]}}
    assert sync_node(node, _claim_with_taints())
    assert _taint_keys(node) == ["dedicated", "node.cilium.io/agent-not-ready"]
    node["spec"]["taints"] = [t for t in node["spec"]["taints"] if t["key"] == "dedicated"]  # type: ignore[index]
    sync_node(node, _claim_with_taints())  # the agent removed its taint; a retried registration does not put it back
    assert _taint_keys(node) == ["dedicated"]


def test_the_node_is_owned_by_its_claim_once_and_keeps_its_other_owners() -> None:
    claim = _claim_with_taints().model_copy(deep=True)
    claim.metadata.uid = "6f1c2a9e-claim"
    other = {"apiVersion": "v1", "kind": "Example", "name": "x", "uid": "other"}
    node: dict[str, object] = {"metadata": {"name": NODE, "ownerReferences": [other]}, "spec": {}}
    assert sync_node(node, claim)
    owner = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": claim.metadata.name,
             "uid": "6f1c2a9e-claim", "blockOwnerDeletion": True}  # fmt: skip
    assert node["metadata"]["ownerReferences"] == [other, owner]  # type: ignore[index]
    assert not sync_node(node, claim), "a second sync changes nothing"


def test_a_node_labelled_do_not_sync_taints_keeps_its_own_taints() -> None:
    unregistered = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
    node: dict[str, object] = {
        "metadata": {"name": NODE, "labels": {"karpenter.sh/do-not-sync-taints": "true"}},
        "spec": {"taints": [unregistered, {"key": "own", "effect": "NoSchedule"}]},
    }
    sync_node(node, _claim_with_taints())
    assert _taint_keys(node) == ["own"]


def test_register_node_leaves_a_node_with_another_provider_id_alone(
    registration: RegistrationActivities, kube: MemKube
) -> None:
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": "aws:///us-west-2a/i-other"}})
    before = kube.get(r.NODE, NODE)
    registration.register_node(ClaimIdentity(name=NAME, provider_id=PROVIDER_ID, node_name=NODE))
    assert kube.get(r.NODE, NODE) == before


def test_register_node_marks_the_pool_healthy(registration: RegistrationActivities, kube: MemKube) -> None:
    capacity = {"cpu": "2", "memory": "4Gi", "pods": "29", "ephemeral-storage": "20Gi"}
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": PROVIDER_ID}})
    as_admin_patch(kube, r.NODE, NODE, {"status": {"capacity": capacity}}, subresource="status")
    registration.register_node(
        ClaimIdentity(name=NAME, provider_id=PROVIDER_ID, node_name=NODE, node_uid=uid(kube, r.NODE, NODE))
    )
    status = kube.get(r.NODEPOOL, "default")["status"]
    healthy = next(c for c in status["conditions"] if c["type"] == "NodeRegistrationHealthy")
    assert (healthy["status"], healthy["reason"]) == ("True", "NodeRegistrationHealthy")


@pytest.mark.parametrize(("partition", "expected"), [("3", "3"), ("", None)])
def test_register_node_learns_the_placement_group_partition_from_the_instance(
    registration: RegistrationActivities, kube: MemKube, cloud: FakeCloudProvider, partition: str, expected: str | None
) -> None:
    """Karpenter's placement group registration hook: EC2 picks the partition; the claim and its Node get
    karpenter.k8s.aws/placement-group-partition from the instance (none outside a partition group)."""
    group_label, partition_label = "karpenter.k8s.aws/placement-group-id", "karpenter.k8s.aws/placement-group-partition"
    as_admin_patch(kube, r.NODECLAIM, NAME, {"metadata": {"labels": {group_label: "pg-1"}}})
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": PROVIDER_ID}})
    cloud.put_running("i-0123", {}, placement_group_id="pg-1", placement_group_partition=partition)
    registration.register_node(
        ClaimIdentity(name=NAME, provider_id=PROVIDER_ID, node_name=NODE, node_uid=uid(kube, r.NODE, NODE))
    )
    node_labels = kube.get(r.NODE, NODE)["metadata"]["labels"]
    assert node_labels[group_label] == "pg-1"
    assert node_labels.get(partition_label) == expected
    assert claim(kube)["metadata"]["labels"].get(partition_label) == expected


def test_find_node_uses_the_node_directory_and_lists_only_when_it_cannot_tell(
    kube: MemKube, cloud: FakeCloudProvider, events: Events
) -> None:
    lists = count_lists(kube)
    nodes = NodeDirectory()
    registration = RegistrationActivities(kube, cloud, events, "test", nodes=nodes)  # type: ignore[arg-type]
    check = FindNodeInput(name=NAME, provider_id=PROVIDER_ID)
    assert registration.find_node(check).node_name == ""
    assert lists.count("nodes") == 1, "no watch yet: the Nodes are listed"

    nodes.mark_complete()  # the watch listed every Node, none with the providerID
    assert registration.find_node(check).node_name == ""
    assert lists.count("nodes") == 1, "a complete directory that names no Node answers alone"

    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": PROVIDER_ID}})
    nodes.put(PROVIDER_ID, NODE, uid(kube, r.NODE, NODE))
    found = registration.find_node(check)
    assert (found.node_name, found.node_uid) == (NODE, uid(kube, r.NODE, NODE))
    assert lists.count("nodes") == 1, "the Node it names is read by name"

    nodes.put(PROVIDER_ID, "ip-stale", "old-uid")  # a Node deleted while no watch ran
    assert registration.find_node(check).node_name == NODE
    assert lists.count("nodes") == 2, "a stale entry falls back to the list"


def test_the_node_directory_forgets_on_reset_and_keeps_a_newer_node_on_drop() -> None:
    nodes = NodeDirectory()
    nodes.put("p-1", "a", "u-a")
    nodes.put("p-1", "b", "u-b")  # a new Node took the providerID
    nodes.drop("p-1", "a")  # the old one's deletion, seen late
    assert nodes.find("p-1") == (False, ("b", "u-b"))
    nodes.mark_complete()
    nodes.reset()
    assert nodes.find("p-1") == (False, None)
