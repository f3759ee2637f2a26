"""The disruption controller on the local stack, observed through the Kubernetes API only.

- A Deployment scaled to 0 leaves no NodeClaim, Node or running instance within 60 s of its last pod
  going (default NodePool: WhenEmptyOrUnderutilized, consolidateAfter 0s, budget 10%, rounded up).
- A NodePool with `budgets: [{nodes: "0"}]` disrupts nothing: its empty node stays.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import claim_tag, deployment, eventually, live_instances
from workers.dev_cmd import stack_config
from workflows.disruption import WORKFLOW_ID, DisruptionState

pytestmark = pytest.mark.e2e

FROZEN_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: frozen}
spec:
  disruption:
    budgets: [{nodes: "0"}]
  template:
    metadata:
      labels: {pool: frozen}
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"""


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


async def controller_rounds(stack: DevStack) -> int:
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    state = await client.get_workflow_handle(WORKFLOW_ID).query("status", result_type=DisruptionState)
    return state.rounds


def scale(stack: DevStack, name: str, replicas: int) -> None:
    stack.kube.patch(r.DEPLOYMENT, name, {"spec": {"replicas": replicas}}, namespace="default")


def test_a_deployment_scaled_to_zero_leaves_no_node_claim_node_or_instance_within_60s(stack: DevStack) -> None:
    stack.apply_text(deployment("shrink", 3, cpu="500m", memory="512Mi"))
    eventually(lambda: all_running(stack, "shrink"), what="pods running")
    claims = claims_of_pool(stack, "default")
    nodes = {
        c.get("status", {}).get("nodeName") for c in stack.kube.list(r.NODECLAIM) if c["metadata"]["name"] in claims
    }
    assert claims

    scale(stack, "shrink", 0)
    eventually(lambda: not pods_of(stack, "shrink"), what="pods gone")
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
    stack.apply_text(FROZEN_POOL)
    selector = "      nodeSelector: {karpenter.sh/nodepool: frozen}"
    stack.apply_text(deployment("frozen", 1, cpu="500m", memory="512Mi", extra_spec=selector))
    eventually(lambda: all_running(stack, "frozen"), what="pods running")
    claims = claims_of_pool(stack, "frozen")
    assert claims
    scale(stack, "frozen", 0)
    eventually(lambda: not pods_of(stack, "frozen"), what="pods gone")
    rounds = asyncio.run(controller_rounds(stack))
    eventually(lambda: asyncio.run(controller_rounds(stack)) >= rounds + 3, what="three more controller rounds")
    assert claims_of_pool(stack, "frozen") == claims
    stack.kube.delete(r.DEPLOYMENT, "frozen", "default")
