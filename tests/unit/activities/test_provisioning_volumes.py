"""The provisioning activity launches nothing for a pending pod whose PersistentVolumeClaim cannot be used
yet (scheduling.provisioning.volumes): the pod stays pending with a FailedScheduling event that says why, counts as
ignored, and the other pending pods are provisioned for in the same round."""

from __future__ import annotations

from typing import Any

from kube import resources as r
from tests.unit.activities.test_provisioning_isolation import World, node_class, node_pool, pending_pod

Obj = dict[str, Any]


def with_claim(name: str, claim: str) -> Obj:
    pod = pending_pod(name)
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return pod


def world_with(mode: str) -> World:
    world = World([node_class("default"), node_pool("general-purpose", "default"), with_claim("db-0", "data-db-0"),
                   pending_pod("web-0")])  # fmt: skip
    world.kube.create(r.STORAGECLASS, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                       "metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com",
                                       "volumeBindingMode": mode})  # fmt: skip
    world.kube.create(r.PVC, {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                              "metadata": {"name": "data-db-0", "namespace": "default"},
                              "spec": {"storageClassName": "gp3"}})  # fmt: skip
    return world


def test_a_pod_whose_unbound_claim_binds_immediately_waits_and_the_others_are_provisioned() -> None:
    world = world_with("Immediate")
    plan = world.solve()
    assert [pod for claim in plan.node_claims for pod in claim.pods] == ["default/web-0"]
    [waiting] = plan.unschedulable
    assert waiting.pod == "default/db-0"
    assert 'waiting for its volumes: PersistentVolumeClaim "default/data-db-0" is unbound' in waiting.reason
    assert world.activities.metrics.ignored_pods._value.get() == 1
    world.apply(plan)
    assert any(reason == "FailedScheduling" and 'StorageClass "gp3" binds Immediate' in message
               for reason, message in world.events.recorded)  # fmt: skip


def test_a_pod_whose_claim_waits_for_its_first_consumer_is_provisioned_for() -> None:
    plan = world_with("WaitForFirstConsumer").solve()
    assert sorted(pod for claim in plan.node_claims for pod in claim.pods) == ["default/db-0", "default/web-0"]
    assert not plan.unschedulable
