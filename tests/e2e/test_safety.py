"""A workflow never touches a node that is not its own, and one that outlived its NodeClaim ends.

1. The user's sequence: `nodeflow dev`, a Deployment, Ctrl-C, `nodeflow dev` again (same state dir), the
   Deployment again. The new cluster's node gets the same name as the old one (names come from private
   IPs); after several running checks the new node, its pods and its instance are untouched, and no
   workflow of the first run is running.
2. A workflow whose NodeClaim vanished while no worker ran (its finalizer removed by hand): the next
   worker ends it at start-up, terminating the instance tagged for it, without waiting for a timer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from devstack.stack import DevStack, DevStackConfig
from kube import resources as r
from tests.e2e.conftest import claim_tag, deployment, live_instances
from tests.eventually import eventually
from workers.cli.dev import stack_config
from workflows.messages import NodeClaimSignal, Query
from workflows.nodeclaim_state import NodeClaimState

pytestmark = pytest.mark.e2e

APP = deployment("web", 2, cpu="250m", memory="256Mi")


def config(state_dir: Any) -> DevStackConfig:
    return stack_config(state_dir=state_dir)


def bound(stack: DevStack) -> list[dict[str, Any]] | None:
    pods = stack.kube.list(r.POD, namespace="default", label_selector="app=web")
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running" and p["spec"].get("nodeName")]
    return pods if pods and len(running) == len(pods) else None


def snapshot(stack: DevStack) -> dict[str, Any]:
    """What the new cluster has: nodes by name with uid, taints and deletion; pod uids and nodes;
    live instances."""
    nodes = {
        n["metadata"]["name"]: (n["metadata"]["uid"], n["spec"].get("taints"), n["metadata"].get("deletionTimestamp"))
        for n in stack.kube.list(r.NODE)
    }
    pods = sorted((p["metadata"]["uid"], p["spec"].get("nodeName")) for p in stack.kube.list(r.POD, "default"))
    return {"nodes": nodes, "pods": pods, "instances": sorted(i["InstanceId"] for i in live_instances(stack))}


async def running_node_claim_workflows(stack: DevStack) -> list[str]:
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    query = 'WorkflowType="NodeClaim" AND ExecutionStatus="Running"'
    return sorted([w.id async for w in client.list_workflows(query)])


async def fewest_running_checks(stack: DevStack) -> int:
    """The fewest running checks any NodeClaim workflow has done (its `status` query), 0 with none."""
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    counts = []
    for workflow_id in await running_node_claim_workflows(stack):
        state = await client.get_workflow_handle(workflow_id).query(Query.STATUS, result_type=NodeClaimState)
        counts.append(state.drift_checks)
    return min(counts, default=0)


async def ask_every_workflow_to_check(stack: DevStack) -> None:
    """Signal `check_drift` to every running NodeClaim workflow, as the worker's watchers and claim sweep
    do: each runs a running check (liveness and drift) on its claim and node."""
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    for workflow_id in await running_node_claim_workflows(stack):
        await client.get_workflow_handle(workflow_id).signal(NodeClaimSignal.CHECK_DRIFT, "e2e: check now")


def untouched_through_checks(stack: DevStack, before: dict[str, Any], checks: int = 4) -> None:
    """Every claim's workflow, asked `checks` times, does `checks` running checks (a stale workflow would
    have acted by then) and nothing of the cluster changed."""
    for done in range(1, checks + 1):
        asyncio.run(ask_every_workflow_to_check(stack))
        eventually(
            lambda done=done: asyncio.run(fewest_running_checks(stack)) >= done,  # type: ignore[misc]
            timeout=60,
            interval=0.25,
            what=f"{done} running checks",
        )
    assert snapshot(stack) == before


def test_a_restarted_local_stack_never_pairs_old_workflows_with_the_new_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    state_dir = tmp_path_factory.mktemp("restart")
    with DevStack(config(state_dir)) as first:
        first.apply_text(APP)
        eventually(lambda: bound(first), timeout=90, what="pods bound in the first run")
        old_nodes = {n["metadata"]["name"] for n in first.kube.list(r.NODE)}
        old_workflows = asyncio.run(running_node_claim_workflows(first))
    assert old_workflows

    with DevStack(config(state_dir)) as second:
        assert not set(old_workflows) & set(asyncio.run(running_node_claim_workflows(second)))
        second.apply_text(APP)
        eventually(lambda: bound(second), timeout=90, what="pods bound in the second run")
        new_nodes = {n["metadata"]["name"] for n in second.kube.list(r.NODE)}
        assert new_nodes & old_nodes, "the scenario needs a node name reused from the first run"
        untouched_through_checks(second, snapshot(second))
        running = asyncio.run(running_node_claim_workflows(second))
        claims = {f"nodeclaim-{c['metadata']['name']}" for c in second.kube.list(r.NODECLAIM)}
        assert set(running) == claims  # no workflow of the first run


def test_a_workflow_whose_claim_vanished_is_ended_when_the_worker_starts(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with DevStack(config(tmp_path_factory.mktemp("orphan"))) as stack:
        stack.apply_text(APP)
        eventually(lambda: bound(stack), timeout=90, what="pods bound")
        claim = stack.kube.list(r.NODECLAIM)[0]
        name = claim["metadata"]["name"]
        stack.stop_worker()
        # An operator removes the finalizer of a claim: it is gone at once, its workflow is not.
        stack.kube.patch(r.NODECLAIM, name, {"metadata": {"finalizers": None}})
        stack.kube.delete(r.NODECLAIM, name)
        assert f"nodeclaim-{name}" in asyncio.run(running_node_claim_workflows(stack))
        stack.start_worker()
        eventually(
            lambda: f"nodeclaim-{name}" not in asyncio.run(running_node_claim_workflows(stack)),
            timeout=90,
            interval=0.25,
            what="the orphaned workflow to end",
        )
        eventually(
            lambda: all(claim_tag(i) != name for i in live_instances(stack)),
            timeout=90,
            what="its instance to terminate",
        )
