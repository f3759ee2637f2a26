"""The disruption controller on the local stack, observed through the Kubernetes API only.

- A workload right-sized onto a big node is consolidated onto a cheaper one, its pod placed throughout,
  also when the worker is SIGKILLed after the taint, after the replacement's launch and during the drain.

- A Deployment scaled to 0 leaves no NodeClaim, Node or running instance within 60 s of its last pod
  going (default NodePool: WhenEmptyOrUnderutilized, consolidateAfter 0s, budget 10%, rounded up).
- A NodePool with `budgets: [{nodes: "0"}]` disrupts nothing: its empty node stays.
- A pod annotated `karpenter.sh/do-not-disrupt: "true"` keeps its mostly idle node through whole
  controller rounds; with the annotation removed, the node is consolidated onto a cheaper one.
- A changed AMI of an EC2NodeClass marks its nodes Drifted (AMIDrift), and the controller alone rolls
  them onto the new AMI, never disrupting more nodes at once than the NodePool's budget.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from cloudprovider.aws.pricing import load_price_table
from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import assert_one_instance_per_claim, claim_tag, deployment, live_instances
from tests.eventually import eventually
from workers.dev_cmd import stack_config
from workflows.disruption import WORKFLOW_ID, DisruptionState

pytestmark = pytest.mark.e2e


def pool(name: str, budget: str) -> str:
    """A NodePool whose nodes only its own pods go to (a taint they tolerate), with one budget."""
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  disruption:
    budgets: [{{nodes: "{budget}"}}]
  template:
    spec:
      taints: [{{key: pool, value: {name}, effect: NoSchedule}}]
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
"""


def pinned(name: str) -> str:
    """Pod spec lines that pin a Deployment to pool `name`."""
    return (
        f"      nodeSelector: {{karpenter.sh/nodepool: {name}}}\n"
        f"      tolerations: [{{key: pool, value: {name}, effect: NoSchedule}}]"
    )


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    with DevStack(stack_config(state_dir=tmp_path_factory.mktemp("disruption"))) as running:
        yield running


def pods_of(stack: DevStack, app: str) -> list[dict[str, Any]]:
    return stack.kube.list(r.POD, namespace="default", label_selector=f"app={app}")


def all_running(stack: DevStack, app: str) -> bool:
    pods = pods_of(stack, app)
    return bool(pods) and all(p.get("status", {}).get("phase") == "Running" for p in pods)


def claims_of_pool(stack: DevStack, pool: str) -> list[str]:
    return [
        c["metadata"]["name"]
        for c in stack.kube.list(r.NODECLAIM)
        if (c["metadata"].get("labels") or {}).get("karpenter.sh/nodepool") == pool
    ]


async def controller_state(stack: DevStack) -> DisruptionState:
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    state: DisruptionState = await client.get_workflow_handle(WORKFLOW_ID).query("status", result_type=DisruptionState)
    return state


async def controller_rounds(stack: DevStack) -> int:
    return (await controller_state(stack)).rounds


def scale(stack: DevStack, name: str, replicas: int) -> None:
    stack.kube.patch(r.DEPLOYMENT, name, {"spec": {"replicas": replicas}}, namespace="default")


def test_a_deployment_scaled_to_zero_leaves_no_node_claim_node_or_instance_within_60s(stack: DevStack) -> None:
    stack.apply_text(deployment("shrink", 3, cpu="500m", memory="512Mi"))
    eventually(lambda: all_running(stack, "shrink"), timeout=90, what="pods running")
    claims = claims_of_pool(stack, "default")
    nodes = {
        c.get("status", {}).get("nodeName") for c in stack.kube.list(r.NODECLAIM) if c["metadata"]["name"] in claims
    }
    assert claims

    scale(stack, "shrink", 0)
    eventually(lambda: not pods_of(stack, "shrink"), timeout=90, what="pods gone")
    last_pod_gone = time.monotonic()

    def everything_gone() -> bool:
        names = {n["metadata"]["name"] for n in stack.kube.list(r.NODE)}
        instances = {claim_tag(i) for i in live_instances(stack)}
        return (
            not set(claims_of_pool(stack, "default")) & set(claims)
            and not names & nodes
            and not instances & set(claims)
        )

    eventually(everything_gone, timeout=60, interval=1, what="NodeClaims, Nodes and instances gone")
    print(f"empty nodes gone {time.monotonic() - last_pod_gone:.1f}s after the last pod")


def test_a_budget_of_zero_nodes_disrupts_nothing(stack: DevStack) -> None:
    stack.apply_text(pool("frozen", "0"))
    stack.apply_text(deployment("frozen", 1, cpu="500m", memory="512Mi", extra_spec=pinned("frozen")))
    eventually(lambda: all_running(stack, "frozen"), timeout=90, what="pods running")
    claims = claims_of_pool(stack, "frozen")
    assert claims
    scale(stack, "frozen", 0)
    eventually(lambda: not pods_of(stack, "frozen"), timeout=90, what="pods gone")
    rounds = asyncio.run(controller_rounds(stack))
    eventually(
        lambda: asyncio.run(controller_rounds(stack)) >= rounds + 3, timeout=90, what="three more controller rounds"
    )
    assert claims_of_pool(stack, "frozen") == claims
    stack.kube.delete(r.DEPLOYMENT, "frozen", "default")


def claim_prices(stack: DevStack, pool: str) -> dict[str, str]:
    """NodeClaim name -> instance type, for the pool's claims not being deleted."""
    return {
        c["metadata"]["name"]: (c["metadata"].get("labels") or {}).get("node.kubernetes.io/instance-type", "")
        for c in stack.kube.list(r.NODECLAIM)
        if (c["metadata"].get("labels") or {}).get("karpenter.sh/nodepool") == pool
        and not c["metadata"].get("deletionTimestamp")
    }


def test_a_right_sized_workload_is_consolidated_onto_a_cheaper_node_with_its_pod_placed_throughout(
    stack: DevStack,
) -> None:
    prices = load_price_table().prices
    stack.apply_text(pool("resize", "100%"))
    stack.apply_text(deployment("resize", 1, cpu="7", memory="2Gi", extra_spec=pinned("resize")))
    eventually(lambda: all_running(stack, "resize"), timeout=90, what="the big pod running")
    big = claim_prices(stack, "resize")
    assert len(big) == 1
    big_type = next(iter(big.values()))

    # The workload is right-sized: the new pod fits on the big node, which is now mostly idle.
    container = [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                  "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]  # fmt: skip
    stack.kube.patch(r.DEPLOYMENT, "resize", {"spec": {"template": {"spec": {"containers": container}}}}, "default")
    pending_since: dict[str, float] = {}
    longest_pending = [0.0]

    def consolidated() -> bool:
        now = time.monotonic()
        for pod in pods_of(stack, "resize"):
            uid = pod["metadata"]["uid"]
            if pod.get("status", {}).get("phase") == "Running":
                pending_since.pop(uid, None)
            else:
                longest_pending[0] = max(longest_pending[0], now - pending_since.setdefault(uid, now))
        claims = claim_prices(stack, "resize")
        return len(claims) == 1 and next(iter(claims)) not in big and all_running(stack, "resize")

    try:
        eventually(consolidated, timeout=150, interval=0.5, what="the pod consolidated onto a cheaper node")
    except AssertionError as err:
        recent = asyncio.run(controller_state(stack)).recent
        raise AssertionError(f"{err}; claims {claim_prices(stack, 'resize')}; controller: {recent}") from None
    small_type = next(iter(claim_prices(stack, "resize").values()))
    assert prices[small_type] < prices[big_type], (small_type, big_type)
    assert longest_pending[0] < 30, f"a pod was pending {longest_pending[0]:.0f}s"
    print(f"{big_type} (${prices[big_type]}/h) -> {small_type} (${prices[small_type]}/h)")
    stack.kube.delete(r.DEPLOYMENT, "resize", "default")


def tainted_nodes(stack: DevStack, claims: set[str]) -> list[str]:
    """Nodes of these claims carrying karpenter.sh/disrupted."""
    names = {
        (c.get("status") or {}).get("nodeName") for c in stack.kube.list(r.NODECLAIM) if c["metadata"]["name"] in claims
    }
    return [
        n["metadata"]["name"]
        for n in stack.kube.list(r.NODE)
        if n["metadata"]["name"] in names
        and any(t.get("key") == "karpenter.sh/disrupted" for t in n["spec"].get("taints") or [])
    ]


def deleting(stack: DevStack, name: str) -> bool:
    claim = next((c for c in stack.kube.list(r.NODECLAIM) if c["metadata"]["name"] == name), None)
    return claim is None or bool(claim["metadata"].get("deletionTimestamp"))


def test_a_worker_killed_during_a_consolidation_leaks_doubles_and_strands_nothing(stack: DevStack) -> None:
    stack.apply_text(pool("chaos", "100%"))
    stack.apply_text(deployment("chaos", 1, cpu="7", memory="2Gi", extra_spec=pinned("chaos")))
    eventually(lambda: all_running(stack, "chaos"), timeout=90, what="the big pod running")
    (big,) = claim_prices(stack, "chaos")
    container = [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                  "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]  # fmt: skip
    stack.kube.patch(r.DEPLOYMENT, "chaos", {"spec": {"template": {"spec": {"containers": container}}}}, "default")

    moments = {
        "after the taint": lambda: bool(tainted_nodes(stack, {big})),
        "after the replacement's launch": lambda: len(claims_of_pool(stack, "chaos")) > 1,
        "during the drain": lambda: deleting(stack, big),
    }
    for moment, reached in moments.items():
        eventually(reached, timeout=120, interval=0.1, what=moment)
        stack.kill_worker()
        stack.start_worker()

    def settled() -> bool:
        claims = claim_prices(stack, "chaos")
        return len(claims) == 1 and big not in claims and all_running(stack, "chaos")

    eventually(settled, timeout=150, interval=0.5, what="the consolidation to finish after the kills")
    eventually(lambda: big not in claims_of_pool(stack, "chaos"), timeout=60, what="the old NodeClaim gone")
    (replacement,) = claim_prices(stack, "chaos")
    assert tainted_nodes(stack, {replacement}) == []  # the replacement is not left tainted
    assert claims_of_pool(stack, "chaos") == [replacement]  # no second replacement
    assert_one_instance_per_claim(stack)
    stack.kube.delete(r.DEPLOYMENT, "chaos", "default")


def node_of(stack: DevStack, claim: str) -> str:
    return str(stack.kube.get(r.NODECLAIM, claim).get("status", {}).get("nodeName", ""))


def test_a_do_not_disrupt_pod_keeps_its_node_until_the_annotation_goes(stack: DevStack) -> None:
    prices = load_price_table().prices
    stack.apply_text(pool("keep", "100%"))
    annotations = {"karpenter.sh/do-not-disrupt": "true"}
    stack.apply_text(deployment("keep", 1, cpu="7", memory="2Gi", extra_spec=pinned("keep"), annotations=annotations))
    eventually(lambda: all_running(stack, "keep"), timeout=90, what="the big pod running")
    (big,) = claim_prices(stack, "keep")
    big_type = claim_prices(stack, "keep")[big]

    # Right-sized: the new (still annotated) pod fits on the big node, which is then mostly idle, and
    # would be replaced by a cheaper one (as the consolidation test above shows) but for the annotation.
    container = [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                  "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]  # fmt: skip
    stack.kube.patch(r.DEPLOYMENT, "keep", {"spec": {"template": {"spec": {"containers": container}}}}, "default")

    def resized() -> dict[str, Any] | None:
        pods = pods_of(stack, "keep")
        small = [p for p in pods if p["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m"]
        return small[0] if len(pods) == 1 and small and all_running(stack, "keep") else None

    pod = eventually(resized, timeout=60, what="only the right-sized pod left")
    assert pod["spec"]["nodeName"] == node_of(stack, big)

    # A whole controller round after that found no command, the pod's annotation rejecting the node (a
    # round that decides a command validates and taints before it ends, and records the command instead;
    # `nodeflow explain` would name the pod, at ~7 s a call). Other pools' commands may come first.
    rounds = asyncio.run(controller_rounds(stack))

    def kept() -> str | None:
        state = asyncio.run(controller_state(stack))
        last = state.recent[-1] if state.recent else ""
        return last if state.rounds >= rounds + 2 and "no command" in last and "PodDoNotDisrupt" in last else None

    eventually(kept, timeout=60, interval=1, what="a whole controller round that left the node for its pod")
    assert claim_prices(stack, "keep") == {big: big_type}
    assert tainted_nodes(stack, {big}) == []

    # The annotation removed from the running pod (its ReplicaSet's replacement pod will carry it again,
    # on the cheaper node): the node is consolidated.
    name = pod["metadata"]["name"]
    stack.kube.patch(r.POD, name, {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": None}}}, "default")

    def consolidated() -> bool:
        claims = claim_prices(stack, "keep")
        return len(claims) == 1 and big not in claims and all_running(stack, "keep")

    try:
        eventually(consolidated, timeout=120, interval=0.5, what="the node consolidated once the annotation went")
    except AssertionError as err:
        recent = asyncio.run(controller_state(stack)).recent
        raise AssertionError(f"{err}; claims {claim_prices(stack, 'keep')}; controller: {recent}") from None
    small_type = next(iter(claim_prices(stack, "keep").values()))
    assert prices[small_type] < prices[big_type], (small_type, big_type)
    stack.kube.delete(r.DEPLOYMENT, "keep", "default")


def al2023_image(stack: DevStack, release: str) -> str:
    """The id of the seeded x86_64 AL2023 EKS image of a release (the local stack seeds several)."""
    name = f"amazon-eks-node-al2023-x86_64-standard-1.34-{release}"
    (image,) = stack.ec2.describe_images(Filters=[{"Name": "name", "Values": [name]}])["Images"]
    return str(image["ImageId"])


def pinned_ami_pool(cluster: str, image_id: str) -> str:
    """An EC2NodeClass selecting one AMI by id, and a NodePool of 2-vCPU nodes on it that only drift may
    disrupt (consolidation off), one node at a time."""
    return f"""
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: amiroll}}
spec:
  role: "KarpenterNodeRole-{cluster}"
  amiFamily: AL2023
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: "{cluster}"}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: "{cluster}"}}}}]
  amiSelectorTerms: [{{id: {image_id}}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: amiroll}}
spec:
  disruption:
    consolidateAfter: Never
    budgets: [{{nodes: "1"}}]
  template:
    spec:
      taints: [{{key: pool, value: amiroll, effect: NoSchedule}}]
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
        - {{key: kubernetes.io/arch, operator: In, values: ["amd64"]}}
        - {{key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: amiroll}}
"""


def drift_reason(claim: dict[str, Any]) -> str:
    """The reason of the claim's Drifted=True condition, '' when it has none."""
    conditions = (claim.get("status") or {}).get("conditions") or []
    return next((c.get("reason", "") for c in conditions if c["type"] == "Drifted" and c["status"] == "True"), "")


def test_a_changed_node_class_ami_rolls_every_node_within_the_budget_without_manual_commands(stack: DevStack) -> None:
    old, new = al2023_image(stack, "v20240807"), al2023_image(stack, "v20250715")
    stack.apply_text(pinned_ami_pool(stack.config.cluster_name, old))
    # 1.2 vCPU each: one pod per 2-vCPU node, so two nodes, and a drifted node's pod needs a replacement.
    stack.apply_text(deployment("amiroll", 2, cpu="1200m", memory="512Mi", extra_spec=pinned("amiroll")))
    eventually(lambda: all_running(stack, "amiroll"), timeout=90, what="both pods running")
    originals = set(claim_prices(stack, "amiroll"))
    assert len(originals) == 2
    images = {claim_tag(i): i["ImageId"] for i in live_instances(stack)}
    assert {images[c] for c in originals} == {old}

    stack.apply_text(pinned_ami_pool(stack.config.cluster_name, new))
    pending_since: dict[str, float] = {}
    longest_pending = [0.0]
    most_disrupting = [0]

    def rolled() -> bool:
        now = time.monotonic()
        for pod in pods_of(stack, "amiroll"):
            uid = pod["metadata"]["uid"]
            if pod.get("status", {}).get("phase") == "Running":
                pending_since.pop(uid, None)
            else:
                longest_pending[0] = max(longest_pending[0], now - pending_since.setdefault(uid, now))
        claims = {
            c["metadata"]["name"]: c
            for c in stack.kube.list(r.NODECLAIM)
            if (c["metadata"].get("labels") or {}).get("karpenter.sh/nodepool") == "amiroll"
        }
        going = {n for n, c in claims.items() if c["metadata"].get("deletionTimestamp")}
        most_disrupting[0] = max(most_disrupting[0], len(going | set(tainted_nodes_of(stack, claims))))
        images = {claim_tag(i): i["ImageId"] for i in live_instances(stack)}
        return (
            not set(claims) & originals
            and len(claims) == 2
            and all(images.get(n) == new and not drift_reason(c) for n, c in claims.items())
            and all_running(stack, "amiroll")
        )

    def drifted() -> bool:
        rolled()  # keep sampling
        claims = [c for c in stack.kube.list(r.NODECLAIM) if c["metadata"]["name"] in originals]
        return any(drift_reason(c) == "AMIDrift" for c in claims) or not claims

    try:
        eventually(drifted, timeout=60, interval=0.5, what="the original NodeClaims marked Drifted (AMIDrift)")
        eventually(rolled, timeout=150, interval=0.5, what="every node rolled onto the new AMI")
    except AssertionError as err:
        recent = asyncio.run(controller_state(stack)).recent
        claims = {c["metadata"]["name"]: drift_reason(c) for c in stack.kube.list(r.NODECLAIM)}
        raise AssertionError(f"{err}; claims (drift reason) {claims}; controller: {recent}") from None
    # Seen disrupting (tainted or deleting) while sampled, never two at once with a budget of one node.
    assert most_disrupting[0] == 1, f"at most {most_disrupting[0]} node(s) seen disrupted at once; budget 1"
    assert longest_pending[0] < 30, f"a pod was pending {longest_pending[0]:.0f}s"
    print(f"rolled {sorted(originals)} from {old} to {new}; longest pending pod {longest_pending[0]:.1f}s")
    stack.kube.delete(r.DEPLOYMENT, "amiroll", "default")


def tainted_nodes_of(stack: DevStack, claims: dict[str, dict[str, Any]]) -> list[str]:
    """The claims (name -> object) whose node carries karpenter.sh/disrupted."""
    nodes = {(c.get("status") or {}).get("nodeName"): name for name, c in claims.items()}
    return [
        nodes[n["metadata"]["name"]]
        for n in stack.kube.list(r.NODE)
        if n["metadata"]["name"] in nodes
        and any(t.get("key") == "karpenter.sh/disrupted" for t in n["spec"].get("taints") or [])
    ]
