"""Interruption on the local stack: a spot interruption warning put on the interruption queue (as
EventBridge would) for a spot node with a pod: the worker's consumer disrupts the NodeClaim (drained,
its instance terminated), the pod is bound again on a new spot node, and the replacement is not the
interrupted (instance type, zone, spot) offering; the message is gone from the queue."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import all_instances, deployment
from tests.eventually import eventually
from tests.interruption_events import spot_interruption
from workers.dev_cmd import stack_config

pytestmark = pytest.mark.e2e

QUEUE = "nodeflow-dev-interruption"
POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    spec:
      taints: [{key: pool, value: spot, effect: NoSchedule}]
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["spot"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"""
APP = deployment(
    "spot-app", 1, cpu="500m", memory="512Mi",
    extra_spec="      nodeSelector: {karpenter.sh/nodepool: spot}\n"
    "      tolerations: [{key: pool, value: spot, effect: NoSchedule}]",
)  # fmt: skip
OFFERING_LABELS = ("node.kubernetes.io/instance-type", "topology.kubernetes.io/zone", "karpenter.sh/capacity-type")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    config = stack_config(
        state_dir=tmp_path_factory.mktemp("interruption"), worker_args=["--interruption-queue", QUEUE]
    )
    with DevStack(config) as running:
        yield running


def sqs_client(stack: DevStack) -> Any:
    return boto3.client(
        "sqs", region_name=stack.config.region, endpoint_url=stack.moto_url,
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip


def running_pod_node(stack: DevStack) -> str | None:
    pods = stack.kube.list(r.POD, namespace="default", label_selector="app=spot-app")
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running" and p["spec"].get("nodeName")]
    return str(running[0]["spec"]["nodeName"]) if len(pods) == 1 and running else None


def claim_of_node(stack: DevStack, node: str) -> dict[str, Any] | None:
    return next((c for c in stack.kube.list(r.NODECLAIM) if c.get("status", {}).get("nodeName") == node), None)


def test_a_spot_interruption_replaces_the_node_on_another_offering(stack: DevStack) -> None:
    sqs = sqs_client(stack)
    url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    stack.apply_text(POOL + "---\n" + APP)
    node = eventually(lambda: running_pod_node(stack), timeout=90, what="the pod running on a spot node")
    claim = claim_of_node(stack, node)
    assert claim is not None
    labels = claim["metadata"]["labels"]
    offering = tuple(labels[k] for k in OFFERING_LABELS)
    assert offering[2] == "spot"
    instance_id = claim["status"]["providerID"].rsplit("/", 1)[-1]

    sqs.send_message(QueueUrl=url, MessageBody=spot_interruption(instance_id))

    def replaced() -> str | None:
        current = running_pod_node(stack)
        return current if current and current != node else None

    new_node = eventually(replaced, timeout=120, interval=0.5, what="the pod bound again on another node")
    new_claim = claim_of_node(stack, new_node)
    assert new_claim is not None
    new_offering = tuple(new_claim["metadata"]["labels"][k] for k in OFFERING_LABELS)
    assert new_offering[2] == "spot" and new_offering != offering
    eventually(
        lambda: all(i["InstanceId"] != instance_id or i["State"]["Name"] == "terminated" for i in all_instances(stack)),
        timeout=60,
        what="the interrupted instance terminated",
    )
    eventually(
        lambda: claim["metadata"]["name"] not in {c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)},
        timeout=60,
        what="the interrupted NodeClaim gone",
    )
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
