"""EC2NodeClass termination (activities.provisioning.nodeclass_termination): the finalizer is added by the provisioner's
reconcile before anything is created in the cloud; a deleted node class waits for its NodeClaims, saying
how many, then has its cloud resources deleted and is let go. Over an in-memory API and the fake cloud."""

from __future__ import annotations

import pytest

from activities.provisioning.nodeclass_termination import (
    FAILED,
    FINALIZER,
    WAITING,
    referencing_claims,
    waiting_message,
    with_finalizer,
    without_finalizer,
)
from cloudprovider.errors import CloudProviderError
from kube import resources as r
from kube.errors import NotFoundError
from kube.types import Obj
from tests.unit.activities.test_provisioning_isolation import World, node_class, node_pool


def claim(name: str, node_class_name: str, kind: str = "EC2NodeClass") -> Obj:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": kind, "name": node_class_name},
            "requirements": [],
        },
    }


def test_claims_reference_a_node_class_by_name_and_kind() -> None:
    claims = [claim("b", "default"), claim("a", "default"), claim("c", "other"), claim("d", "default", kind="X")]
    assert referencing_claims("default", claims) == ["a", "b"]
    assert referencing_claims("gone", claims) == []


def test_the_waiting_message_counts_the_claims_and_names_a_few() -> None:
    assert waiting_message("default", ["a"]) == (
        "EC2NodeClass default is being deleted: waiting for 1 NodeClaim that reference it to terminate (a); "
        "delete them, or the NodePools that use this node class"
    )
    many = waiting_message("default", [f"c{i}" for i in range(7)])
    assert "waiting for 7 NodeClaims" in many and "(c0, c1, c2, c3, c4 and 2 more)" in many


def test_the_finalizer_is_added_once_never_to_an_object_being_deleted_and_removed_alone() -> None:
    obj: Obj = {"metadata": {"name": "x", "finalizers": ["other"]}}
    assert with_finalizer(obj) == ["other", FINALIZER]
    assert with_finalizer({"metadata": {"finalizers": [FINALIZER]}}) is None
    assert with_finalizer({"metadata": {"name": "x", "deletionTimestamp": "2026-01-01T00:00:00Z"}}) is None
    assert without_finalizer({"metadata": {"finalizers": ["other", FINALIZER]}}) == ["other"]
    assert without_finalizer(obj) is None


def test_a_reconciled_node_class_gets_the_finalizer() -> None:
    world = World([node_class("default"), node_pool("general-purpose", "default")])
    world.solve()
    assert world.kube.get(r.EC2NODECLASS, "default")["metadata"]["finalizers"] == [FINALIZER]
    assert world.condition(r.EC2NODECLASS, "default", "Ready")["status"] == "True"


def test_a_deleted_node_class_waits_for_its_claims_then_its_resources_go_and_it_is_let_go() -> None:
    world = World([node_class("default", instanceProfile="mine"), node_pool("general-purpose", "default")])
    world.solve()
    world.kube.create(r.NODECLAIM, claim("default-abc", "default"))
    world.kube.delete(r.EC2NODECLASS, "default")

    plan = world.solve()
    ready = world.condition(r.EC2NODECLASS, "default", "Ready")
    assert (ready["status"], ready["reason"]) == ("False", WAITING)
    assert "waiting for 1 NodeClaim" in ready["message"] and "default-abc" in ready["message"]
    assert [e for e in world.events.recorded if e[0] == WAITING] == [(WAITING, ready["message"])]
    world.solve()  # still waiting: no second event for the same message
    assert [e for e in world.events.recorded if e[0] == WAITING] == [(WAITING, ready["message"])]
    assert world.cloud.node_classes_cleaned == []
    assert [i.name for i in plan.invalid if i.kind == "NodePool"] == ["general-purpose"]

    uid = world.kube.get(r.NODECLAIM, "default-abc")["metadata"]["uid"]
    world.kube.delete(r.NODECLAIM, "default-abc", preconditions={"uid": uid})
    world.solve()
    assert world.cloud.node_classes_cleaned == [("default", "mine")]
    with pytest.raises(NotFoundError):
        world.kube.get(r.EC2NODECLASS, "default")


def test_a_cloud_failure_keeps_the_finalizer_and_says_why() -> None:
    world = World([node_class("default")])
    world.solve()
    world.kube.delete(r.EC2NODECLASS, "default")
    world.cloud.fail_next("delete_node_class_resources", CloudProviderError("AccessDenied: iam:DeleteInstanceProfile"))
    world.solve()
    ready = world.condition(r.EC2NODECLASS, "default", "Ready")
    assert ready["reason"] == FAILED and "AccessDenied" in ready["message"]
    assert world.kube.get(r.EC2NODECLASS, "default")["metadata"]["finalizers"] == [FINALIZER]
    world.solve()  # the next round tries again
    assert world.cloud.node_classes_cleaned == [("default", None)]
    assert world.kube.list(r.EC2NODECLASS) == []


def test_a_node_class_deleted_without_the_finalizer_is_not_touched() -> None:
    world = World([node_class("default")])
    world.kube.patch(r.EC2NODECLASS, "default", {"metadata": {"finalizers": ["someone-else"]}})
    world.kube.delete(r.EC2NODECLASS, "default")
    world.solve()
    assert world.cloud.node_classes_cleaned == []
    assert world.kube.get(r.EC2NODECLASS, "default")["metadata"]["finalizers"] == ["someone-else"]
