"""The summary and its settled verdict, built from plain API objects."""

from __future__ import annotations

from typing import Any

from devstack.summary import build_summary, is_settled, pod_counts


def make_pod(name: str, node: str | None = None, phase: str = "Pending") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": phase}}


def make_claim(name: str, instance_id: str | None = "i-1", ready: bool = True, **labels: str) -> dict[str, Any]:
    status = "True" if ready else "False"
    conditions = [{"type": t, "status": status} for t in ("Launched", "Registered", "Initialized")]
    claim_status: dict[str, Any] = {"conditions": conditions, "nodeName": f"node-{name}"}
    if instance_id:
        claim_status["providerID"] = f"aws:///us-west-2a/{instance_id}"
    return {
        "metadata": {
            "name": name,
            "labels": {
                "karpenter.sh/nodepool": "default",
                "node.kubernetes.io/instance-type": "m5.large",
                "topology.kubernetes.io/zone": "us-west-2a",
                "karpenter.sh/capacity-type": "on-demand",
                **labels,
            },
        },
        "status": claim_status,
    }


def make_instance(instance_id: str, claim: str | None, state: str = "running") -> dict[str, Any]:
    tags = [{"Key": "karpenter.sh/nodeclaim", "Value": claim}] if claim else []
    return {
        "InstanceId": instance_id,
        "InstanceType": "m5.large",
        "Placement": {"AvailabilityZone": "us-west-2a"},
        "State": {"Name": state},
        "Tags": tags,
    }


def test_an_empty_cluster_is_settled() -> None:
    summary = build_summary([], [], [])
    assert summary["settled"] is True
    assert summary["pods"] == {"total": 0, "bound": 0, "pending": 0}


def test_pods_count_bound_and_pending_but_not_finished_ones() -> None:
    pods = [make_pod("a", "n1", "Running"), make_pod("b"), make_pod("c", "n1", "Succeeded")]
    pods.append(make_pod("d", None, "Failed"))
    assert pod_counts(pods) == {"total": 2, "bound": 1, "pending": 1}


def test_a_pending_pod_keeps_the_cluster_unsettled() -> None:
    summary = build_summary([make_pod("a")], [], [])
    assert summary["settled"] is False
    assert summary["unsettled"] == ["1 pod(s) not bound to a node"]


def test_settled_with_one_ready_claim_and_its_instance() -> None:
    summary = build_summary([make_pod("a", "node-c1", "Running")], [make_claim("c1")], [make_instance("i-1", "c1")])
    assert summary["settled"] is True
    assert summary["nodeClaims"] == [
        {
            "name": "c1",
            "nodePool": "default",
            "instanceType": "m5.large",
            "zone": "us-west-2a",
            "capacityType": "on-demand",
            "providerID": "aws:///us-west-2a/i-1",
            "nodeName": "node-c1",
            "conditions": {"Initialized": "True", "Launched": "True", "Registered": "True"},
        }
    ]
    assert summary["instances"] == [
        {"id": "i-1", "type": "m5.large", "zone": "us-west-2a", "state": "running", "nodeClaim": "c1"}
    ]


def test_a_claim_not_initialized_is_unsettled() -> None:
    summary = build_summary([], [make_claim("c1", ready=False)], [make_instance("i-1", "c1")])
    assert not summary["settled"]
    assert "NodeClaim c1: Launched, Registered, Initialized not True" in summary["unsettled"]


def test_a_claim_without_a_live_instance_is_unsettled() -> None:
    summary = build_summary([], [make_claim("c1", instance_id=None)], [make_instance("i-1", "c1", "terminated")])
    assert summary["instances"] == []
    assert summary["unsettled"] == ["NodeClaim c1: 0 live instances, want exactly 1"]


def test_two_live_instances_for_one_claim_is_unsettled() -> None:
    instances = [make_instance("i-1", "c1"), make_instance("i-2", "c1", "pending")]
    assert not is_settled(build_summary([], [make_claim("c1")], instances))


def test_a_leaked_instance_is_unsettled() -> None:
    summary = build_summary([], [], [make_instance("i-9", None), make_instance("i-8", "gone")])
    assert [i["id"] for i in summary["instances"]] == ["i-8", "i-9"]
    assert summary["unsettled"] == [
        "instance i-8 is running for gone (not an existing claim)",
        "instance i-9 is running for no NodeClaim (not an existing claim)",
    ]


def test_an_untagged_instance_is_matched_to_its_claim_by_provider_id() -> None:
    summary = build_summary([], [make_claim("c1", instance_id="i-7")], [make_instance("i-7", None)])
    assert summary["instances"][0]["nodeClaim"] == "c1"
    assert summary["settled"]


def test_stopped_instances_are_listed_but_do_not_count_as_live() -> None:
    summary = build_summary([], [], [make_instance("i-3", None, "stopped")])
    assert summary["instances"][0]["state"] == "stopped"
    assert summary["settled"]


def test_errors_and_seconds_are_carried_through() -> None:
    summary = build_summary([], [], [], errors=["bad pool"], seconds=1.23456)
    assert summary["errors"] == ["bad pool"]
    assert summary["seconds"] == 1.235


def make_deployment(wanted: int, have: int, generation: int = 1, observed: int = 1) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": generation},
        "spec": {"replicas": wanted},
        "status": {"replicas": have, "observedGeneration": observed},
    }


def test_a_deployment_that_has_not_created_its_pods_yet_is_unsettled() -> None:
    summary = build_summary([], [], [], workloads=[make_deployment(wanted=3, have=0)])
    assert summary["workloads"] == {
        "total": 1,
        "complete": 0,
        "incomplete": ["Deployment default/web: 0/3 pods created"],
    }
    assert not summary["settled"]


def test_a_deployment_whose_new_spec_is_not_observed_is_unsettled() -> None:
    summary = build_summary([], [], [], workloads=[make_deployment(3, 3, generation=2, observed=1)])
    assert summary["unsettled"] == ["Deployment default/web: its controller has not observed generation 2 yet"]


def test_a_complete_deployment_with_bound_pods_is_settled() -> None:
    pods = [make_pod(f"p{i}", "node-c1", "Running") for i in range(3)]
    summary = build_summary(pods, [make_claim("c1")], [make_instance("i-1", "c1")], workloads=[make_deployment(3, 3)])
    assert summary["workloads"]["complete"] == 1
    assert summary["settled"]
