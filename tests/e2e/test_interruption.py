"""Interruption on the local stack: a spot interruption warning put on the interruption queue (as
EventBridge would) for a spot node with a pod: the worker's consumer disrupts the NodeClaim (drained,
its instance terminated), the pod is bound again on a new spot node, and the replacement is not the
interrupted (instance type, zone, spot) offering; the message is gone from the queue.

On the shared stack (its worker consumes the queue); the chaos case, the worker killed while it holds
ten messages, is in test_chaos.py."""

from __future__ import annotations

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import all_instances, claim_of_node
from tests.e2e.interruption_views import APP, POOL
from tests.eventually import eventually
from tests.interruption_events import spot_interruption

pytestmark = pytest.mark.e2e

OFFERING_LABELS = ("node.kubernetes.io/instance-type", "topology.kubernetes.io/zone", "karpenter.sh/capacity-type")


def running_pod_node(stack: DevStack) -> str | None:
    pods = stack.kube.list(r.POD, namespace="default", label_selector="app=spot-app")
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running" and p["spec"].get("nodeName")]
    return str(running[0]["spec"]["nodeName"]) if len(pods) == 1 and running else None


def test_a_spot_interruption_replaces_the_node_on_another_offering(stack: DevStack) -> None:
    sqs, url = stack.sqs, stack.interruption_queue_url
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
