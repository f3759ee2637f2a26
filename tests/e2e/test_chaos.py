"""Chaos: the worker SIGKILLed with a NodeClaim held at each phase boundary (launch, registration,
initialization, drain, termination), and the Temporal server SIGKILLed during a drain.

Faults hold each claim exactly where the kill must land, one claim per phase, all at once, so one kill
covers every boundary:
- launch: CreateFleet returned an instance, but `PATCH nodeclaims/<n>/status` fails, so the claim is
  never marked Launched;
- registration: the instance runs, but the kubelet cannot create its Node (`POST nodes` fails);
- initialization: the Node is registered, but the kubelet cannot report it Ready (`PATCH nodes/<n>/status`);
- drain: a PodDisruptionBudget refuses the eviction of the node's pod;
- termination: TerminateInstances answers 500.
After the restart the faults are cleared; then: no claim ever had a second instance (terminated ones
counted), no live instance is without a claim, the deleted claims are gone with their instance and Node,
and the others are Initialized.

And the interruption queue's consumer killed with the worker while it holds ten messages (received, none
deleted): a new worker gets them again from SQS and acts on each once, no more.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from devstack.stack import DevStack
from kube import resources as r
from kube.errors import NotFoundError
from tests.e2e.conftest import (
    all_instances,
    assert_one_instance_per_claim,
    claim_of_node,
    claim_tag,
    deployment,
    live_instances,
)
from tests.e2e.interruption_views import NODECLAIM_LIST, POOL, SPREAD_APP
from tests.eventually import eventually
from tests.interruption_events import rebalance_recommendation, spot_interruption, state_change

pytestmark = [pytest.mark.e2e, pytest.mark.long]


@pytest.fixture(scope="module")
def stack(failover_stack: DevStack) -> DevStack:
    """A stack of this module's own that fails over fast: its tests kill the worker and the Temporal server."""
    return failover_stack


HOLD = -1  # a Kubernetes fault that lasts until cleared
EC2_HOLD = 100_000  # EC2 faults count down; this many outlast any test
SETTLE_SECONDS = 150
NODECLAIM_STATUS = "^/apis/karpenter.sh/v1/nodeclaims/[^/]+/status$"


def pdb(name: str) -> str:
    return f"""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {name}, namespace: default}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: {name}}}}}
"""


def claims(stack: DevStack) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in stack.kube.list(r.NODECLAIM)}


def condition(claim: dict[str, Any], kind: str) -> str:
    conditions = (claim.get("status") or {}).get("conditions") or []
    return next((c["status"] for c in conditions if c["type"] == kind), "Unknown")


def is_gone(stack: DevStack, resource: r.Resource, name: str) -> bool:
    try:
        stack.kube.get(resource, name)
    except NotFoundError:
        return True
    return False


def claim_on_node(stack: DevStack, node_name: str) -> str:
    return next(n for n, c in claims(stack).items() if (c.get("status") or {}).get("nodeName") == node_name)


def pod_of(stack: DevStack, app: str) -> dict[str, Any]:
    """The one pod of the Deployment `app`; a second pod means the first was evicted and replaced."""
    pods = stack.kube.list(r.POD, namespace="default", label_selector=f"app={app}")
    assert len(pods) == 1, [(p["metadata"]["name"], p["spec"].get("nodeName"), p.get("status")) for p in pods]
    return pods[0]


def node_of(stack: DevStack, app: str) -> str:
    return str(pod_of(stack, app)["spec"]["nodeName"])


def wait_running(stack: DevStack, app: str) -> None:
    """Wait until the kubelet reports the app's pod Running: an eviction ignores PodDisruptionBudgets
    for a pod still Pending (as the API server does), so a budget only holds a drain after this."""
    eventually(lambda: (pod_of(stack, app).get("status") or {}).get("phase") == "Running", timeout=30,
               what=f"the {app} pod to be Running")  # fmt: skip


def new_claim(stack: DevStack, known: set[str], ready: Any, what: str) -> str:
    """The one claim not in `known` once `ready(claim)` holds for it."""

    def find() -> str | None:
        fresh = {n: c for n, c in claims(stack).items() if n not in known}
        return next((n for n, c in sorted(fresh.items()) if ready(c)), None)

    return eventually(find, timeout=60, what=what)


def settle(stack: DevStack) -> None:
    summary = stack.wait_settled(timeout=SETTLE_SECONDS)
    assert summary["settled"], summary["unsettled"]


def phase_pool(phase: str) -> str:
    """A NodePool whose nodes only the pods of this phase select: no pod lands on another phase's node.
    Consolidation is off (`consolidateAfter: Never`): this test follows each claim through a crash, and
    the disruption controller must not remove a node that is empty while its pod waits out a fault."""
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: chaos-{phase}}}
spec:
  disruption: {{consolidateAfter: Never}}
  template:
    metadata: {{labels: {{chaos: {phase}}}}}
    spec:
      requirements:
        - {{key: karpenter.k8s.aws/instance-category, operator: In, values: ["c", "m", "r"]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
"""


def one_pod(phase: str) -> str:
    return deployment(f"chaos-{phase}", 1, cpu="1", memory="1Gi", extra_spec=f"      nodeSelector: {{chaos: {phase}}}")


PHASES = ("launch", "register", "init", "drain", "term")


def test_a_worker_killed_at_every_phase_boundary_loses_and_leaks_nothing(stack: DevStack) -> None:
    kube_faults, aws_faults = stack.kube_faults, stack.aws_faults

    # Two running nodes to take through drain and termination.
    stack.apply_text(
        "---\n".join([phase_pool(p) for p in PHASES] + [one_pod("drain"), pdb("chaos-drain"), one_pod("term")])
    )
    settle(stack)
    drained_node, terminated_node = node_of(stack, "chaos-drain"), node_of(stack, "chaos-term")
    drained, terminated = claim_on_node(stack, drained_node), claim_on_node(stack, terminated_node)
    assert drained != terminated
    instance_of = {claim_tag(i): i["InstanceId"] for i in live_instances(stack)}

    # Drain: the PDB refuses the eviction of the only pod on the node.
    wait_running(stack, "chaos-drain")
    stack.kube.delete(r.NODECLAIM, drained)

    def drain_held() -> bool:
        node = stack.kube.get(r.NODE, drained_node)
        tainted = any(t["key"] == "karpenter.sh/disrupted" for t in node["spec"].get("taints") or [])
        return tainted and node_of(stack, "chaos-drain") == drained_node

    eventually(drain_held, timeout=60, what="the drain to be held by the PodDisruptionBudget")

    # Termination: the node is empty (its Deployment is gone), TerminateInstances keeps failing.
    aws_faults.server_error("TerminateInstances", EC2_HOLD)
    stack.kube.delete(r.DEPLOYMENT, "chaos-term", "default")
    stack.kube.delete(r.NODECLAIM, terminated)
    eventually(lambda: condition(claims(stack)[terminated], "InstanceTerminating") == "True", timeout=60,
               what="the termination to be held by TerminateInstances failures")  # fmt: skip

    # Initialization: registered, but the Node never turns Ready.
    known = set(claims(stack))
    kube_faults.fail("PATCH", "^/api/v1/nodes/[^/]+/status$", 503, HOLD)
    stack.apply_text(one_pod("init"))
    initializing = new_claim(stack, known, lambda c: condition(c, "Registered") == "True", "a claim Registered")
    assert condition(claims(stack)[initializing], "Initialized") != "True"

    # Registration: launched, but its Node is never created.
    known = set(claims(stack))
    kube_faults.fail("POST", "^/api/v1/nodes$", 503, HOLD)
    stack.apply_text(one_pod("register"))
    registering = new_claim(stack, known, lambda c: condition(c, "Launched") == "True", "a claim Launched")

    # Launch: CreateFleet returned, the claim cannot be marked Launched.
    known = set(claims(stack))
    kube_faults.fail("PATCH", NODECLAIM_STATUS, 503, HOLD)
    stack.apply_text(one_pod("launch"))
    launching = eventually(
        lambda: next((claim_tag(i) for i in live_instances(stack) if claim_tag(i) and claim_tag(i) not in known), None),
        timeout=60,
        what="CreateFleet to launch the new claim's instance",
    )
    assert condition(claims(stack)[launching], "Launched") != "True"
    assert condition(claims(stack)[registering], "Registered") != "True"
    assert condition(claims(stack)[initializing], "Initialized") != "True"

    stack.kill_worker()
    stack.start_worker()
    kube_faults.clear()
    aws_faults.clear()
    stack.kube.delete(r.PDB, "chaos-drain", "default")

    eventually(lambda: is_gone(stack, r.NODECLAIM, drained), timeout=90, what=f"NodeClaim {drained} to be gone")
    eventually(lambda: is_gone(stack, r.NODECLAIM, terminated), timeout=90, what=f"NodeClaim {terminated} to be gone")
    settle(stack)
    assert is_gone(stack, r.NODE, drained_node) and is_gone(stack, r.NODE, terminated_node)
    ended = {i["InstanceId"]: i["State"]["Name"] for i in all_instances(stack)}
    assert {ended[instance_of[drained]], ended[instance_of[terminated]]} <= {"shutting-down", "terminated"}
    now = claims(stack)
    for name in (launching, registering, initializing):
        assert condition(now[name], "Initialized") == "True", (name, now[name].get("status"))
    launched = Counter(claim_tag(i) for i in all_instances(stack) if claim_tag(i))
    assert {claim: n for claim, n in launched.items() if n != 1} == {}, "a claim got more than one instance"
    assert_one_instance_per_claim(stack)


def test_a_drain_resumes_after_the_temporal_server_is_killed_and_restarted(stack: DevStack) -> None:
    stack.apply_text("---\n".join([phase_pool("temporal"), one_pod("temporal"), pdb("chaos-temporal")]))
    settle(stack)
    node = node_of(stack, "chaos-temporal")
    claim = claim_on_node(stack, node)
    wait_running(stack, "chaos-temporal")
    stack.kube.delete(r.NODECLAIM, claim)
    eventually(
        lambda: any(
            t["key"] == "karpenter.sh/disrupted" for t in stack.kube.get(r.NODE, node)["spec"].get("taints") or []
        ),
        timeout=60,
        what="the drain to start",
    )

    stack.restart_temporal(kill=True)
    stack.kube.delete(r.PDB, "chaos-temporal", "default")

    eventually(lambda: is_gone(stack, r.NODECLAIM, claim), timeout=120, what=f"NodeClaim {claim} to be gone")
    assert is_gone(stack, r.NODE, node)
    settle(stack)
    assert_one_instance_per_claim(stack)


# -- interruption: the worker killed holding a batch of ten messages ---------------------------------------


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
