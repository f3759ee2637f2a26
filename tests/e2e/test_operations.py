"""Operating nodes with the `nodeflow` CLI on the real local stack: status, drain, replace, drift, and
finding the cluster through KUBECONFIG as kubectl does.

One stack for the module (`nodeflow status` lists every claim of the cluster, so no other module's); its
worker's claim sweep looks every 2 s (the worker flag --claim-sweep-interval), so an expiry is acted on at
once.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client

from devstack.stack import DevStack
from kube import resources as r
from kube.errors import NotFoundError
from scheduling.disruption.replace import REPLACEMENT_OF_ANNOTATION
from tests.e2e.conftest import REPO, assert_one_instance_per_claim, claim_of_node, deployment, nodeflow, pods_of
from tests.eventually import eventually
from workers.cli.dev import stack_config
from workflows.messages import NodeClaimSignal

pytestmark = [pytest.mark.e2e, pytest.mark.long]

SMALL = {"cpu": "250m", "memory": "256Mi"}


def labelled_pool(name: str, extra_labels: str = "", expire_after: str = "") -> str:
    """An on-demand NodePool on the default EC2NodeClass whose nodes carry the label `pool: <name>` (and
    `extra_labels`, e.g. ", tier: gold"), with `expireAfter` when given; never consolidated, so that only
    the drift, expiration or command a test makes removes its nodes."""
    expiry = f'\n      expireAfter: "{expire_after}"' if expire_after else ""
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    metadata:
      labels: {{pool: {name}{extra_labels}}}
    spec:{expiry}
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
  disruption: {{consolidateAfter: Never}}
"""


SWEEP_INTERVAL = "2s"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    config = stack_config(
        state_dir=tmp_path_factory.mktemp("ops-stack"), worker_args=["--claim-sweep-interval", SWEEP_INTERVAL]
    )
    with DevStack(config) as running:
        yield running


def get_or_none(stack: DevStack, resource: r.Resource, name: str) -> dict[str, Any] | None:
    try:
        return stack.kube.get(resource, name)
    except NotFoundError:
        return None


def condition(claim: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    conditions = (claim or {}).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == type_), {})


def test_status_lists_the_running_claims(stack: DevStack) -> None:
    stack.apply_text(deployment("ops-status", 1, **SMALL))
    assert stack.wait_settled(timeout=90)["settled"]
    claims = sorted(c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM))

    def listed() -> list[dict[str, Any]] | None:
        rows = json.loads(nodeflow(stack, "status", "-o", "json").stdout)
        return rows if sorted(row["name"] for row in rows) == claims else None

    rows = eventually(listed, timeout=30, what="every NodeClaim in `nodeflow status`")
    assert all(row["phase"] == "Running" and row["node_name"] and row["summary"] for row in rows)
    one = json.loads(nodeflow(stack, "status", rows[0]["node_name"], "-o", "json").stdout)
    assert one["name"] == rows[0]["name"] and one["conditions"]["Initialized"] == "True"


def test_explain_finds_the_cluster_through_kubeconfig_as_kubectl(stack: DevStack, tmp_path: Path) -> None:
    # No --kubeconfig: KUBECONFIG lists a missing file (skipped, as kubectl skips it) and the stack's
    # kubeconfig, whose credentials (whatever auth the emulator asks) are all the CLI gets. HOME is empty.
    stack.apply_text(deployment("ops-kubeconfig", 1, **SMALL))
    assert stack.wait_settled(timeout=90)["settled"]
    node_name = pods_of(stack, "ops-kubeconfig")[0]["spec"]["nodeName"]
    env = {k: v for k, v in os.environ.items() if k not in ("NODEFLOW_KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env |= {"KUBECONFIG": f"{tmp_path / 'missing'}{os.pathsep}{stack.kubeconfig}", "HOME": str(tmp_path),
            "PYTHONPATH": str(REPO)}  # fmt: skip
    context = yaml.safe_load(stack.kubeconfig.read_text())["current-context"]
    for extra in ([], ["--context", context]):
        argv = [sys.executable, "-m", "workers.cli", "explain", node_name, "-o", "json",
                "--temporal-address", stack.temporal_address, *extra]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=REPO)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["node"] == node_name


def test_drain_terminates_the_node_and_its_pods_land_elsewhere(stack: DevStack) -> None:
    stack.apply_text(deployment("ops-drain", 2, cpu="1", memory="1Gi"))
    assert stack.wait_settled(timeout=90)["settled"]
    node_name = pods_of(stack, "ops-drain")[0]["spec"]["nodeName"]
    claim = claim_of_node(stack, node_name)
    assert claim is not None
    name = claim["metadata"]["name"]

    out = nodeflow(stack, "drain", node_name, "--reason", "e2e drain").stdout
    assert f"drain sent to NodeClaim {name} (node {node_name})" in out

    eventually(
        lambda: get_or_none(stack, r.NODECLAIM, name) is None and get_or_none(stack, r.NODE, node_name) is None,
        timeout=60,
        what=f"NodeClaim {name} and Node {node_name} to be gone",
    )
    summary = stack.wait_settled(timeout=90)
    assert summary["settled"], summary
    assert all(p["spec"].get("nodeName") not in (None, node_name) for p in pods_of(stack, "ops-drain"))
    assert_one_instance_per_claim(stack)


def test_replace_brings_the_replacement_up_before_the_original_goes(stack: DevStack) -> None:
    stack.apply_text(deployment("ops-replace", 1, cpu="1500m", memory="1Gi"))
    assert stack.wait_settled(timeout=90)["settled"]
    node_name = pods_of(stack, "ops-replace")[0]["spec"]["nodeName"]
    claim = claim_of_node(stack, node_name)
    assert claim is not None
    original = claim["metadata"]["name"]

    nodeflow(stack, "replace", original)
    seen: dict[str, Any] = {}

    def replacement_ready_while_original_present() -> bool:
        claims = stack.kube.list(r.NODECLAIM)
        replacement = next(
            (c for c in claims if c["metadata"].get("annotations", {}).get(REPLACEMENT_OF_ANNOTATION) == original),
            None,
        )
        original_obj = next((c for c in claims if c["metadata"]["name"] == original), None)
        if replacement is not None and condition(replacement, "Initialized").get("status") == "True":
            seen["replacement"] = replacement["metadata"]["name"]
            seen["original_present"] = original_obj is not None
            return True
        assert original_obj is not None and not original_obj["metadata"].get("deletionTimestamp"), (
            "the original started going before its replacement was initialized"
        )
        return False

    eventually(replacement_ready_while_original_present, timeout=60, what="the replacement to initialize")
    assert seen["original_present"]
    eventually(lambda: get_or_none(stack, r.NODECLAIM, original) is None, timeout=60, what=f"{original} gone")
    summary = stack.wait_settled(timeout=90)
    assert summary["settled"], summary
    assert get_or_none(stack, r.NODECLAIM, seen["replacement"]) is not None
    assert_one_instance_per_claim(stack)


def test_changing_the_nodepool_template_marks_its_claims_drifted(stack: DevStack) -> None:
    stack.apply_text(labelled_pool("drifty"))
    stack.apply_text(deployment("ops-drift", 1, extra_spec="      nodeSelector: {pool: drifty}", **SMALL))
    assert stack.wait_settled(timeout=90)["settled"]
    node_name = pods_of(stack, "ops-drift")[0]["spec"]["nodeName"]
    claim = claim_of_node(stack, node_name)
    assert claim is not None
    name = claim["metadata"]["name"]
    assert not condition(get_or_none(stack, r.NODECLAIM, name), "Drifted")

    stack.apply_text(labelled_pool("drifty", extra_labels=", tier: gold"))
    drifted = eventually(
        lambda: condition(get_or_none(stack, r.NODECLAIM, name), "Drifted") or None,
        timeout=30,
        what=f"NodeClaim {name} to be marked Drifted",
    )
    assert drifted["status"] == "True" and drifted["reason"] == "NodePoolDrifted", drifted
    assert get_or_none(stack, r.NODE, node_name) is not None  # drift only marks the claim


def classy_node_class(cluster_name: str, user_data: str = "") -> str:
    extra = f"\n  userData: {json.dumps(user_data)}" if user_data else ""
    return f"""
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: classy}}
spec:
  role: "KarpenterNodeRole-{cluster_name}"
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: "{cluster_name}"}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: "{cluster_name}"}}}}]
  amiSelectorTerms: [{{alias: al2023@latest}}]{extra}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: classy}}
spec:
  template:
    metadata:
      labels: {{pool: classy}}
    spec:
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: classy}}
"""


def test_a_node_class_change_is_node_class_drift_and_replace_rolls_the_node_onto_it(stack: DevStack) -> None:
    cluster = stack.config.cluster_name
    stack.apply_text(classy_node_class(cluster))
    stack.apply_text(deployment("ops-classy", 1, extra_spec="      nodeSelector: {pool: classy}", **SMALL))
    assert stack.wait_settled(timeout=90)["settled"]
    claim = claim_of_node(stack, pods_of(stack, "ops-classy")[0]["spec"]["nodeName"])
    assert claim is not None
    original = claim["metadata"]["name"]
    annotations = stack.kube.get(r.NODECLAIM, original)["metadata"]["annotations"]
    assert annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "nodeflow-v1"

    stack.apply_text(classy_node_class(cluster, user_data="#!/bin/bash\necho tuned"))
    drifted = eventually(
        lambda: condition(get_or_none(stack, r.NODECLAIM, original), "Drifted") or None,
        timeout=60,
        what=f"NodeClaim {original} to be marked Drifted",
    )
    assert drifted["reason"] == "NodeClassDrift", drifted

    nodeflow(stack, "replace", original, "--reason", "roll onto the new user data")
    eventually(lambda: get_or_none(stack, r.NODECLAIM, original) is None, timeout=90, what=f"{original} replaced")
    assert stack.wait_settled(timeout=90)["settled"]
    claim = claim_of_node(stack, pods_of(stack, "ops-classy")[0]["spec"]["nodeName"])
    assert claim is not None
    replacement = claim["metadata"]["name"]

    asyncio.run(signal_check_drift(stack, replacement))  # as the claim sweep or a NodeClass change would

    def checked() -> bool:
        return int(json.loads(nodeflow(stack, "status", replacement, "-o", "json").stdout)["drift_checks"]) >= 1

    eventually(checked, timeout=60, what=f"a drift check of the replacement {replacement}")
    assert not condition(get_or_none(stack, r.NODECLAIM, replacement), "Drifted")


async def signal_check_drift(stack: DevStack, claim: str) -> None:
    client = await Client.connect(stack.temporal_address)
    await client.get_workflow_handle(f"nodeclaim-{claim}").signal(
        NodeClaimSignal.CHECK_DRIFT, "e2e: check the replacement"
    )


def test_a_node_past_its_expire_after_is_expired_and_its_pod_lands_on_a_new_one(stack: DevStack) -> None:
    """The leader's claim sweep signals `expire` once creationTimestamp + expireAfter has passed: the claim
    is marked Expired, drained and terminated, and its pod is provisioned a new node, as in Karpenter."""
    stack.apply_text(labelled_pool("brief", expire_after="30s"))
    stack.apply_text(deployment("ops-brief", 1, extra_spec="      nodeSelector: {pool: brief}", **SMALL))
    assert stack.wait_settled(timeout=90)["settled"]
    node_name = pods_of(stack, "ops-brief")[0]["spec"]["nodeName"]
    claim = claim_of_node(stack, node_name)
    assert claim is not None
    name = claim["metadata"]["name"]
    seen: dict[str, Any] = {}

    def gone() -> bool:
        current = get_or_none(stack, r.NODECLAIM, name)
        if current is not None and condition(current, "Expired").get("status") == "True":
            seen["expired"] = True
        return current is None

    eventually(gone, timeout=120, interval=0.2, what=f"the expired NodeClaim {name} to be gone")
    stack.apply_text(labelled_pool("brief", expire_after="Never"))  # the next node stays
    eventually(
        lambda: any(p["spec"].get("nodeName") not in (None, node_name) for p in pods_of(stack, "ops-brief")),
        timeout=120,
        what="the pod on a new node",
    )
    # the claim's Expired condition lives only until the claim goes (a busy machine's poll can miss it);
    # the DisruptionTerminating event recorded with it stays
    events = [e for e in stack.kube.list(r.EVENT) if (e.get("involvedObject") or {}).get("name") == name]
    expired_event = any(
        e.get("reason") == "DisruptionTerminating" and "expired" in e.get("message", "") for e in events
    )
    assert seen.get("expired") or expired_event, [(e.get("reason"), e.get("message")) for e in events]
    state = json.loads(nodeflow(stack, "status", name, "-o", "json").stdout)
    assert state["expired"] and state["termination_reason"] == "expired after 30s", state
    assert_one_instance_per_claim(stack)


def test_a_drain_a_pdb_blocks_deletes_the_pods_once_the_termination_grace_period_runs_out(stack: DevStack) -> None:
    """As in Karpenter: a NodeClaim's terminationGracePeriod (copied from its NodePool) bounds its drain. A
    PodDisruptionBudget refuses the pod's eviction, so the node stays while the period runs; once it has
    run out, the pod is deleted (no PDB asked) and the node terminated, and the pod lands on a new node."""
    grace = 20
    stack.apply_text(
        f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: graceful}}
spec:
  template:
    metadata:
      labels: {{pool: graceful}}
    spec:
      terminationGracePeriod: {grace}s
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
  disruption: {{consolidateAfter: Never}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: ops-graceful, namespace: default}}
spec:
  maxUnavailable: 0
  selector: {{matchLabels: {{app: ops-graceful}}}}
"""
    )
    stack.apply_text(deployment("ops-graceful", 1, extra_spec="      nodeSelector: {pool: graceful}", **SMALL))
    assert stack.wait_settled(timeout=90)["settled"]
    node_name = pods_of(stack, "ops-graceful")[0]["spec"]["nodeName"]
    claim = claim_of_node(stack, node_name)
    assert claim is not None
    name = claim["metadata"]["name"]
    assert claim["spec"]["terminationGracePeriod"] == f"{grace}s"

    # an eviction ignores PodDisruptionBudgets for a pod still Pending, as the API server does
    eventually(
        lambda: all(p.get("status", {}).get("phase") == "Running" for p in pods_of(stack, "ops-graceful")),
        timeout=30,
        what="the pod to be Running",
    )
    started = time.monotonic()
    stack.kube.delete(r.NODECLAIM, name)
    eventually(
        lambda: (
            "refused by disruption budgets"
            in condition(get_or_none(stack, r.NODECLAIM, name), "Drained").get("message", "")
        ),
        timeout=60,
        what=f"the drain of {name} to be held by the PodDisruptionBudget",
    )
    eventually(lambda: get_or_none(stack, r.NODECLAIM, name) is None, timeout=grace + 60, what=f"{name} gone")
    assert time.monotonic() - started >= grace - 2, "the node went before its terminationGracePeriod ran out"
    eventually(
        lambda: any(p["spec"].get("nodeName") not in (None, node_name) for p in pods_of(stack, "ops-graceful")),
        timeout=120,
        what="the pod on a new node",
    )
    assert_one_instance_per_claim(stack)
