"""Interruption on the local stack: a spot interruption warning put on the interruption queue (as
EventBridge would) for a spot node with a pod: the worker's consumer disrupts the NodeClaim (drained,
its instance terminated), the pod is bound again on a new spot node, and the replacement is not the
interrupted (instance type, zone, spot) offering; the message is gone from the queue.

And the chaos case: the worker SIGKILLed while it holds a batch of ten messages (received, none
deleted): a new worker gets them again from SQS and acts on each once, no more."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import all_instances, deployment
from tests.eventually import eventually
from tests.interruption_events import rebalance_recommendation, spot_interruption, state_change
from workers.dev_cmd import stack_config

pytestmark = [pytest.mark.e2e, pytest.mark.long]

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
SPOT_PODS = (
    "      nodeSelector: {karpenter.sh/nodepool: spot}\n"
    "      tolerations: [{key: pool, value: spot, effect: NoSchedule}]"
)
APP = deployment("spot-app", 1, cpu="500m", memory="512Mi", extra_spec=SPOT_PODS)
SPREAD_APP = deployment(
    "spread-app", 3, cpu="500m", memory="512Mi",
    extra_spec=SPOT_PODS + "\n      affinity:\n        podAntiAffinity:\n"
    "          requiredDuringSchedulingIgnoredDuringExecution:\n"
    "            - {labelSelector: {matchLabels: {app: spread-app}}, topologyKey: kubernetes.io/hostname}",
)  # fmt: skip
NODECLAIM_LIST = "^/apis/karpenter.sh/v1/nodeclaims$"
OFFERING_LABELS = ("node.kubernetes.io/instance-type", "topology.kubernetes.io/zone", "karpenter.sh/capacity-type")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    config = stack_config(state_dir=tmp_path_factory.mktemp("interruption"), interruption_queue=QUEUE)
    with DevStack(config) as running:
        yield running


def running_pod_node(stack: DevStack) -> str | None:
    pods = stack.kube.list(r.POD, namespace="default", label_selector="app=spot-app")
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running" and p["spec"].get("nodeName")]
    return str(running[0]["spec"]["nodeName"]) if len(pods) == 1 and running else None


def claim_of_node(stack: DevStack, node: str) -> dict[str, Any] | None:
    return next((c for c in stack.kube.list(r.NODECLAIM) if c.get("status", {}).get("nodeName") == node), None)


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


def spread_nodes(stack: DevStack) -> dict[str, str] | None:
    """NodeClaim name -> instance id of the three spread-app pods' nodes, once all three run."""
    pods = stack.kube.list(r.POD, namespace="default", label_selector="app=spread-app")
    nodes = {p["spec"].get("nodeName") for p in pods if p.get("status", {}).get("phase") == "Running"}
    if len(pods) != 3 or len(nodes) != 3 or None in nodes:
        return None
    claims = [claim_of_node(stack, str(node)) for node in nodes]
    if any(c is None or not c.get("status", {}).get("providerID") for c in claims):
        return None
    return {c["metadata"]["name"]: c["status"]["providerID"].rsplit("/", 1)[-1] for c in claims if c}


def in_flight(sqs: Any, url: str) -> int:
    return int(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"])[
        "Attributes"]["ApproximateNumberOfMessagesNotVisible"])  # fmt: skip


def test_a_worker_killed_holding_ten_messages_loses_none_and_acts_on_each_once(stack: DevStack) -> None:
    sqs, url = stack.sqs, stack.interruption_queue_url
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "3"})  # redelivery 3 s after a receive
    stack.apply_text(POOL + "---\n" + SPREAD_APP)
    interrupted = eventually(lambda: spread_nodes(stack), timeout=120, what="three spread pods on three spot nodes")
    claims_before = {c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)}
    instances = sorted(interrupted.values())
    warnings = [spot_interruption(i, event_id=f"chaos-warning-{n}") for n, i in enumerate(instances)]
    messages = [
        *warnings,
        warnings[0], warnings[1],  # EventBridge may deliver an event twice
        *(rebalance_recommendation(i) for i in instances),  # an event on the claim, no disruption
        state_change(instances[0], "running"), state_change(instances[1], "pending"),  # nothing to do
    ]  # fmt: skip
    assert len(messages) == 10

    faults = stack.kube_faults
    faults.fail("GET", NODECLAIM_LIST, 503, count=-1)  # the consumer cannot list claims: it holds the batch
    try:
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": m} for n, m in enumerate(messages)])
        eventually(lambda: in_flight(sqs, url) == 10, timeout=30, interval=0.1, what="the worker holding all ten")
        stack.kill_worker()
    finally:
        faults.clear()
    assert stack.interruption_queue_depth() == 10  # none was deleted
    stack.start_worker()

    def replaced() -> bool:
        pods = stack.kube.list(r.POD, namespace="default", label_selector="app=spread-app")
        running = {p["spec"].get("nodeName") for p in pods if p.get("status", {}).get("phase") == "Running"}
        names = {c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)}
        return len(running) == 3 and None not in running and not names & set(interrupted)

    eventually(replaced, timeout=120, interval=0.5, what="the three interrupted claims replaced, the pods running")
    eventually(lambda: stack.interruption_queue_depth() == 0, timeout=30, what="every message deleted")
    after = {c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)}
    new_claims = after - claims_before
    assert len(new_claims) == 3, f"one replacement per interrupted claim, got {sorted(new_claims)}"
    assert claims_before - set(interrupted) <= after  # no other claim was disrupted
