"""Faults injected into the local stack: EC2 insufficient capacity, throttling and 5xx; Kubernetes API 409,
429, 5xx and dropped watches; leaked instances. Nothing leaks (no live instance without a claim), nothing
is lost (every pod bound in the end), and no claim ever gets a second instance."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import (
    all_instances,
    assert_one_instance_per_claim,
    claim_tag,
    deployment,
    live_instances,
    pods_of,
    scrape,
)
from tests.eventually import eventually
from workflows import garbage_collection as gc
from workflows.nodeclaim import workflow_id

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(private_stack: DevStack) -> DevStack:
    """A stack of this module's own: its tests inject faults, mark offerings unavailable and restart the
    worker with a faster garbage collection."""
    return private_stack


SETTLE_SECONDS = 120


def pool(name: str, weight: int, zone: str, team: str, instance_type: str = "c5.large") -> str:
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  weight: {weight}
  template:
    metadata: {{labels: {{team: {team}}}}}
    spec:
      requirements:
        - {{key: node.kubernetes.io/instance-type, operator: In, values: ["{instance_type}"]}}
        - {{key: topology.kubernetes.io/zone, operator: In, values: ["{zone}"]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
"""


def on_team(team: str) -> str:
    return f"      nodeSelector: {{team: {team}}}"


def assert_never_two_instances_for_one_claim(stack: DevStack) -> None:
    launched = Counter(claim_tag(i) for i in all_instances(stack) if claim_tag(i))
    assert [claim for claim, count in launched.items() if count > 1] == []


def settle(stack: DevStack) -> dict[str, Any]:
    summary = stack.wait_settled(timeout=SETTLE_SECONDS)
    assert summary["settled"], summary["unsettled"]
    return summary


def node_zone(stack: DevStack, node_name: str) -> str:
    labels: dict[str, str] = stack.kube.get(r.NODE, node_name)["metadata"]["labels"]
    return labels["topology.kubernetes.io/zone"]


@pytest.fixture(autouse=True)
def no_faults_left(stack: DevStack) -> Any:
    yield
    stack.aws_faults.clear()
    stack.kube_faults.clear()


def test_an_offering_refused_for_capacity_sends_the_pods_to_the_next_pool_and_stays_unavailable(
    stack: DevStack,
) -> None:
    """Both NodePools allow only c5.large; the heavier one only in us-west-2a, which refuses it: that claim
    is deleted with an event, and the pods land in us-west-2b in the next round. With the fault cleared,
    the next pod still goes to us-west-2b: the offering is in the unavailable cache the scheduler reads."""
    stack.apply_text(
        pool("ice-primary", 50, "us-west-2a", "ice") + "---\n" + pool("ice-fallback", 10, "us-west-2b", "ice")
    )
    stack.aws_faults.insufficient_capacity("c5.large", "us-west-2a")

    stack.apply_text(deployment("ice-first", 1, cpu="1", memory="1Gi", extra_spec=on_team("ice")))
    settle(stack)
    first = pods_of(stack, "ice-first")[0]
    assert node_zone(stack, first["spec"]["nodeName"]) == "us-west-2b"
    events = [
        e
        for e in stack.kube.list(r.EVENT)
        if e["reason"] == "InsufficientCapacityError" and e["involvedObject"]["kind"] == "NodeClaim"
    ]
    assert events, "no InsufficientCapacityError event on the refused NodeClaim"
    refused_claims = {e["involvedObject"]["name"] for e in events}
    assert not refused_claims & {c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)}
    failures = scrape(stack.worker_metrics_url())["karpenter_cloudprovider_instance_launch_failures_total"]
    assert any(labels["zone"] == "us-west-2a" and labels["reason"] == "InsufficientInstanceCapacity" and n >= 1
               for labels, n in failures)  # fmt: skip

    stack.aws_faults.clear()
    stack.apply_text(deployment("ice-second", 1, cpu="1", memory="1Gi", extra_spec=on_team("ice")))
    settle(stack)
    second = pods_of(stack, "ice-second")[0]
    assert second["spec"]["nodeName"] != first["spec"]["nodeName"]  # a pod of 1 CPU fills a c5.large
    assert node_zone(stack, second["spec"]["nodeName"]) == "us-west-2b"
    zones = {i["Placement"]["AvailabilityZone"] for i in all_instances(stack) if i["InstanceType"] == "c5.large"}
    assert "us-west-2a" not in zones
    assert_never_two_instances_for_one_claim(stack)


def test_throttling_and_server_errors_from_ec2_are_retried(stack: DevStack) -> None:
    faults = stack.aws_faults
    faults.throttle("CreateFleet", 2)
    faults.server_error("CreateFleet", 1)
    faults.throttle("DescribeInstances", 2)
    faults.server_error("DescribeInstances", 1)

    stack.apply_text(deployment("ec2-faults", 2, cpu="1", memory="1Gi"))
    settle(stack)
    assert faults.get()["throttle"] == {} and faults.get()["serverError"] == {}, "the faults were not all hit"

    node = pods_of(stack, "ec2-faults")[0]["spec"]["nodeName"]
    claim = next(c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM) if c["status"].get("nodeName") == node)
    faults.server_error("TerminateInstances", 2)
    faults.throttle("TerminateInstances", 1)
    stack.kube.delete(r.NODECLAIM, claim)
    eventually(lambda: claim not in {c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)}, timeout=90,
               what=f"NodeClaim {claim} to be terminated through the TerminateInstances faults")  # fmt: skip
    assert faults.get()["serverError"] == {}
    settle(stack)
    assert_one_instance_per_claim(stack)
    assert_never_two_instances_for_one_claim(stack)


def test_kubernetes_api_conflicts_throttling_server_errors_and_dropped_watches(stack: DevStack) -> None:
    kube_faults = stack.kube_faults
    kube_faults.fail("POST", "/apis/karpenter.sh/v1/nodeclaims$", 503, count=1)
    kube_faults.fail("PATCH", "/apis/karpenter.sh/v1/nodeclaims/[^/]+/status$", 409, count=2)
    kube_faults.fail("PATCH", "/api/v1/nodes/[^/]+$", 500, count=2)
    kube_faults.fail("GET", "/api/v1/pods$", 429, count=3)

    stack.apply_text(deployment("kube-faults", 3, cpu="1", memory="1Gi"))
    eventually(lambda: stack.kube_faults.get() == [], timeout=60, what="every injected Kubernetes fault to be hit")
    assert kube_faults.drop_watches() >= 1
    settle(stack)

    # Watches dropped again right before new pods arrive: the pod watcher must watch again to see them.
    kube_faults.drop_watches()
    stack.apply_text(deployment("after-drop", 2, cpu="1", memory="1Gi"))
    settle(stack)
    assert all(p["spec"].get("nodeName") for p in pods_of(stack, "after-drop"))
    assert_one_instance_per_claim(stack)
    assert_never_two_instances_for_one_claim(stack)


async def _collector_state(address: str) -> gc.GarbageCollectorState | None:
    """The garbage collector's `status` query; None while no collector runs."""
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    try:
        state: gc.GarbageCollectorState = await client.get_workflow_handle(gc.WORKFLOW_ID).query(
            gc.GarbageCollectorWorkflow.status
        )
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return None
    return state


def _collector_settings(address: str) -> tuple[int, int]:
    """The collector's (interval, min age), as the leader last configured it; (0, 0) before."""
    state = asyncio.run(_collector_state(address))
    return (state.interval_seconds, state.min_age_seconds) if state else (0, 0)


def _collected(address: str) -> list[str]:
    """Instance ids the collector reports it terminated."""
    state = asyncio.run(_collector_state(address))
    return [i.instance_id for i in state.recent] if state else []


@pytest.fixture(scope="module")
def fast_collector(stack: DevStack) -> None:
    """Restart the worker so the leader looks for garbage every 2 s and spares only instances younger than
    1 s (2 minutes for both by default; the tests cannot wait that long), and wait until it has configured
    the collector with them. The module's later tests keep that worker."""
    stack.config.worker_args += ["--garbage-collection-interval", "2s", "--garbage-collection-min-age", "1s"]
    stack.stop_worker()
    stack.start_worker()
    eventually(
        lambda: _collector_settings(stack.temporal_address) == (2, 1),
        timeout=60,
        interval=0.5,
        what="the restarted leader to configure the garbage collector",
    )


@pytest.mark.usefixtures("fast_collector")
def test_an_instance_whose_nodeclaim_does_not_exist_is_terminated(stack: DevStack) -> None:
    subnet = stack.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    image = stack.ec2.describe_images()["Images"][0]["ImageId"]
    tags = [
        {"Key": f"kubernetes.io/cluster/{stack.config.cluster_name}", "Value": "owned"},
        {"Key": "karpenter.sh/nodeclaim", "Value": "restored-cluster-lost-this"},
        {"Key": "karpenter.sh/nodepool", "Value": "default"},
    ]
    leaked = stack.ec2.run_instances(
        ImageId=image, InstanceType="m5.large", MinCount=1, MaxCount=1, SubnetId=subnet,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )["Instances"][0]["InstanceId"]  # fmt: skip

    eventually(lambda: leaked not in {i["InstanceId"] for i in live_instances(stack)}, timeout=30,
               what=f"the garbage collector to terminate {leaked}")  # fmt: skip
    settle(stack)
    assert_one_instance_per_claim(stack)
    reported_by_collector(stack, leaked)


def reported_by_collector(stack: DevStack, instance_id: str) -> None:
    """Wait for the collector's `status` to list the instance: its round's result reaches the workflow a
    moment after the instance is already terminated."""
    eventually(lambda: instance_id in _collected(stack.temporal_address), timeout=30,
               what=f"the garbage collector to report {instance_id}")  # fmt: skip


async def _forget_workflow(address: str, claim: str) -> None:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    await client.get_workflow_handle(workflow_id(claim)).terminate("e2e: the Temporal namespace was lost")


@pytest.mark.usefixtures("fast_collector")
def test_a_nodeclaim_removed_with_its_workflow_gone_does_not_leak_its_instance(stack: DevStack) -> None:
    """A lost Temporal namespace plus a NodeClaim removed out from under it (finalizer dropped, object
    deleted): no workflow is left to terminate the instance, the garbage collector does."""
    stack.apply_text(deployment("yanked", 1, cpu="1", memory="1Gi"))
    settle(stack)
    node = pods_of(stack, "yanked")[0]["spec"]["nodeName"]
    claim = next(c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM) if c["status"].get("nodeName") == node)
    instance = next(i["InstanceId"] for i in live_instances(stack) if claim_tag(i) == claim)
    asyncio.run(_forget_workflow(stack.temporal_address, claim))
    stack.kube.patch(r.NODECLAIM, claim, {"metadata": {"finalizers": None}})
    stack.kube.delete(r.NODECLAIM, claim)

    eventually(lambda: instance not in {i["InstanceId"] for i in live_instances(stack)}, timeout=30,
               what=f"the garbage collector to terminate {instance} of the removed NodeClaim {claim}")  # fmt: skip
    settle(stack)
    assert_one_instance_per_claim(stack)
    reported_by_collector(stack, instance)
