"""Node operations survive a worker killed with SIGKILL: exactly one instance per claim, drains resume."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.stack import DevStack
from kube import resources as r
from kube.errors import NotFoundError
from tests.e2e.conftest import assert_one_instance_per_claim, claim_tag, deployment, eventually, live_instances

pytestmark = pytest.mark.e2e

PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded, namespace: default}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: guarded}}
"""


def claim_of_node(stack: DevStack, node_name: str) -> dict[str, Any]:
    return next(c for c in stack.kube.list(r.NODECLAIM) if c.get("status", {}).get("nodeName") == node_name)


def is_gone(stack: DevStack, resource: r.Resource, name: str) -> bool:
    try:
        stack.kube.get(resource, name)
    except NotFoundError:
        return True
    return False


def test_should_launch_exactly_one_instance_when_the_worker_dies_right_after_create_fleet(stack: DevStack) -> None:
    stack.apply_text(deployment("crash-launch", 1, cpu="250m", memory="256Mi"))
    known = {claim_tag(i) for i in live_instances(stack)}

    def new_instance() -> dict[str, Any] | None:
        return next((i for i in live_instances(stack) if claim_tag(i) not in known), None)

    instance = eventually(new_instance, timeout=60, interval=0.02, what="CreateFleet to return an instance")
    stack.kill_worker()
    claim = stack.kube.get(r.NODECLAIM, claim_tag(instance))
    launched_before_kill = any(
        c["type"] == "Launched" and c["status"] == "True" for c in claim.get("status", {}).get("conditions") or []
    )
    stack.start_worker()
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    assert_one_instance_per_claim(stack)
    assert [i["InstanceId"] for i in live_instances(stack) if claim_tag(i) == claim_tag(instance)] == [
        instance["InstanceId"]
    ], f"the claim got a second instance (Launched before the kill: {launched_before_kill})"


def test_should_resume_a_drain_after_the_worker_is_killed_in_the_middle(stack: DevStack) -> None:
    stack.apply_text(deployment("guarded", 2, cpu="250m", memory="256Mi") + "---\n" + PDB)
    assert stack.wait_settled(timeout=120)["settled"]
    pod = stack.kube.list(r.POD, namespace="default", label_selector="app=guarded")[0]
    node_name = pod["spec"]["nodeName"]
    claim_name = claim_of_node(stack, node_name)["metadata"]["name"]

    stack.kube.delete(r.NODECLAIM, claim_name)

    def drain_blocked() -> bool:
        node = stack.kube.get(r.NODE, node_name)
        tainted = any(t["key"] == "karpenter.sh/disrupted" for t in node["spec"].get("taints") or [])
        still_there = any(p["spec"].get("nodeName") == node_name for p in stack.kube.list(r.POD, namespace="default"))
        return tainted and still_there

    eventually(drain_blocked, timeout=60, what="the drain to be blocked by the PodDisruptionBudget")
    stack.kill_worker()
    stack.start_worker()
    stack.kube.delete(r.PDB, "guarded", "default")

    eventually(lambda: is_gone(stack, r.NODECLAIM, claim_name), timeout=90, what=f"{claim_name} to be gone")
    assert is_gone(stack, r.NODE, node_name)
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    assert_one_instance_per_claim(stack)
