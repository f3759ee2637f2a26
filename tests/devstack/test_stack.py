"""The embedded local stack on free ports, without the worker: every server answers, the defaults
are applied, manifests apply, the summary has its shape, and stop() leaves no process behind.

The tests share one stack and run in file order; the last one stops it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from devstack.aws import interruption
from devstack.stack import DevStack
from kube.resources import EC2NODECLASS, NODEPOOL, POD
from tests.eventually import eventually
from workers.cli.dev import stack_config

CLUSTER = "stack-test"

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: 500m, memory: 256Mi}}
"""

BAD_NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: broken}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: whenever
"""


def process_groups() -> dict[int, int]:
    """pid -> process group of every live (non-zombie) process."""
    groups = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            groups[int(entry.name)] = int(fields[2])
    return groups


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    state = tmp_path_factory.mktemp("devstack")
    config = stack_config(
        state_dir=state, cluster_name=CLUSTER, ui=True, start_worker=False, interruption_queue=CLUSTER
    )
    with DevStack(config) as running:
        yield running


def test_temporal_answers_with_the_search_attributes(stack: DevStack) -> None:
    async def check() -> tuple[list[str], list[str]]:
        from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest

        client = await Client.connect(stack.temporal_address)
        workflows = [w.id async for w in client.list_workflows()]
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default")
        )
        return workflows, sorted(response.custom_attributes)

    workflows, attributes = asyncio.run(check())
    assert workflows == []
    assert {"NodePool", "InstanceType", "Zone", "CapacityType", "NodeName", "Phase"} <= set(attributes)


def test_the_ui_answers(stack: DevStack) -> None:
    assert stack.ui_url is not None
    with urllib.request.urlopen(stack.ui_url, timeout=5) as response:
        assert response.status == 200


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_works_with_the_kubeconfig(stack: DevStack) -> None:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(stack.kubeconfig), "get", "nodes"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert stack.kubeconfig == stack.config.state_dir / "kubeconfig"


def test_the_defaults_are_applied(stack: DevStack) -> None:
    nodeclass = stack.kube.get(EC2NODECLASS, "default")
    assert nodeclass["spec"]["role"] == f"KarpenterNodeRole-{CLUSTER}"
    assert nodeclass["spec"]["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": CLUSTER}}]
    nodepool = stack.kube.get(NODEPOOL, "default")
    assert nodepool["spec"]["limits"] == {"cpu": 1000}


def test_moto_has_the_seeded_subnets_and_security_group(stack: DevStack) -> None:
    tag = [{"Name": "tag:karpenter.sh/discovery", "Values": [CLUSTER]}]
    subnets = stack.ec2.describe_subnets(Filters=tag)["Subnets"]
    assert len(subnets) >= 3
    assert stack.ec2.describe_security_groups(Filters=tag)["SecurityGroups"]


def test_the_interruption_queue_is_created_passed_to_the_worker_and_counted(stack: DevStack) -> None:
    assert stack.sqs.get_queue_url(QueueName=CLUSTER)["QueueUrl"] == stack.interruption_queue_url
    argv = stack.worker_argv("argv-only")
    assert argv[argv.index("--interruption-queue") + 1] == CLUSTER
    assert stack.summary()["interruptionQueue"] == {"name": CLUSTER, "messages": 0}
    rules = stack.events.list_rules(NamePrefix=CLUSTER)["Rules"]
    assert sorted(r["Name"].removeprefix(f"{CLUSTER}-") for r in rules) == sorted(interruption.RULES)
    stack.send_interruption("i-0123456789abcdef0")  # through EventBridge and its rule, as EC2 would
    assert stack.interruption_queue_depth() == 1
    message = stack.sqs.receive_message(QueueUrl=stack.interruption_queue_url)["Messages"][0]
    event = json.loads(message["Body"])
    assert event["detail-type"] == "EC2 Spot Instance Interruption Warning"
    assert event["detail"]["instance-id"] == "i-0123456789abcdef0"
    assert stack.summary()["interruptionQueue"]["messages"] == 1  # received, not yet deleted
    stack.sqs.delete_message(QueueUrl=stack.interruption_queue_url, ReceiptHandle=message["ReceiptHandle"])
    assert stack.interruption_queue_depth() == 0


def test_a_deployment_gives_pending_pods_and_the_summary_counts_them(stack: DevStack) -> None:
    assert stack.apply_text(DEPLOYMENT) == []
    eventually(
        lambda: len(stack.kube.list(POD, "default", label_selector="app=web")) == 3, timeout=15, what="3 web pods"
    )
    summary = stack.summary()
    assert set(summary) >= {"settled", "seconds", "pods", "nodeClaims", "instances", "errors"}
    assert summary["pods"] == {"total": 3, "bound": 0, "pending": 3}
    assert summary["nodeClaims"] == [] and summary["instances"] == []
    assert summary["settled"] is False and not stack.settled()
    assert stack.wait_settled(0.2)["settled"] is False


def test_an_invalid_nodepool_is_reported_and_still_applied(stack: DevStack) -> None:
    problems = stack.apply_text(BAD_NODEPOOL, source="bad.yaml")
    assert len(problems) == 1 and 'NodePool "broken": spec.template.spec.expireAfter' in problems[0]
    assert stack.kube.get(NODEPOOL, "broken")["spec"]["template"]["spec"]["expireAfter"] == "whenever"
    assert problems[0] in stack.summary()["errors"]


def test_applying_again_merge_patches(stack: DevStack) -> None:
    stack.apply_text(DEPLOYMENT.replace("replicas: 3", "replicas: 1"))
    assert stack.kube.get(NODEPOOL, "default")  # untouched
    eventually(
        lambda: len(stack.kube.list(POD, "default", label_selector="app=web")) == 1,
        timeout=15,
        what="scaled down to 1 pod",
    )


def test_temporal_comes_back_after_a_kill(stack: DevStack) -> None:
    before = stack.pids()["temporal"]
    stack.restart_temporal(kill=True)
    assert stack.pids()["temporal"] != before

    async def count() -> int:
        client = await Client.connect(stack.temporal_address)
        return len([w async for w in client.list_workflows()])

    assert asyncio.run(count()) == 0


def test_stop_leaves_no_process_behind(stack: DevStack) -> None:
    pids = stack.pids()
    assert set(pids) == {"temporal", "kube-api", "moto", "kubelet"}
    stack.stop()
    leftover = {pid: group for pid, group in process_groups().items() if group in pids.values()}
    assert leftover == {}
    state_dir = str(stack.config.state_dir)
    ours = [pid for pid in process_groups() if _parent(pid) == os.getpid() and state_dir in _cmdline(pid)]
    assert ours == []


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
