"""What the disruption end-to-end tests apply and observe: NodePools of their own, their pods and
NodeClaims as the Kubernetes API shows them, and the disruption controller's state (its status query)."""

from __future__ import annotations

import time
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from benchmarks import disruption_stack
from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import pods_of
from workflows.disruption import WORKFLOW_ID, DisruptionState
from workflows.messages import Query


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
    state: DisruptionState = await client.get_workflow_handle(WORKFLOW_ID).query(
        Query.STATUS, result_type=DisruptionState
    )
    return state


def decisions_made(stack: DevStack) -> int:
    """How many disruption decisions the stack's worker has made: the leader looks ahead every 10 s, and
    the controller runs a round only for news (workflows.disruption), so its round counter is no clock."""
    return disruption_stack.decisions_made(stack.worker_metrics_url())


def scale(stack: DevStack, name: str, replicas: int) -> None:
    stack.kube.patch(r.DEPLOYMENT, name, {"spec": {"replicas": replicas}}, namespace="default")


def claim_prices(stack: DevStack, pool: str) -> dict[str, str]:
    """NodeClaim name -> instance type, for the pool's claims not being deleted."""
    return {
        c["metadata"]["name"]: (c["metadata"].get("labels") or {}).get("node.kubernetes.io/instance-type", "")
        for c in stack.kube.list(r.NODECLAIM)
        if (c["metadata"].get("labels") or {}).get("karpenter.sh/nodepool") == pool
        and not c["metadata"].get("deletionTimestamp")
    }


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


def node_of(stack: DevStack, claim: str) -> str:
    return str(stack.kube.get(r.NODECLAIM, claim).get("status", {}).get("nodeName", ""))


def tainted_nodes_of(stack: DevStack, claims: dict[str, dict[str, Any]]) -> list[str]:
    """The claims (name -> object) whose node carries karpenter.sh/disrupted."""
    nodes = {(c.get("status") or {}).get("nodeName"): name for name, c in claims.items()}
    return [
        nodes[n["metadata"]["name"]]
        for n in stack.kube.list(r.NODE)
        if n["metadata"]["name"] in nodes
        and any(t.get("key") == "karpenter.sh/disrupted" for t in n["spec"].get("taints") or [])
    ]


RIGHT_SIZED = [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]  # fmt: skip


def right_size(stack: DevStack, name: str) -> None:
    """Shrink Deployment `name`'s pod to 500m/512Mi: its new pod fits on the big node, now mostly idle."""
    stack.kube.patch(r.DEPLOYMENT, name, {"spec": {"template": {"spec": {"containers": RIGHT_SIZED}}}}, "default")


class PendingWatch:
    """The longest time any pod of Deployment `app` was seen not Running, over the `sample` calls."""

    def __init__(self, stack: DevStack, app: str) -> None:
        self.stack, self.app = stack, app
        self.longest = 0.0
        self._since: dict[str, float] = {}  # pod uid -> when first seen not Running

    def sample(self) -> None:
        now = time.monotonic()
        for pod in pods_of(self.stack, self.app):
            uid = pod["metadata"]["uid"]
            if pod.get("status", {}).get("phase") == "Running":
                self._since.pop(uid, None)
            else:
                self.longest = max(self.longest, now - self._since.setdefault(uid, now))
