"""End-to-end fixtures: the real embedded local stack (Temporal dev server, moto, the Kubernetes API
emulator, simulated kubelet and pod binder) and the real worker as a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devstack.stack import DevStack
from kube import resources as r
from kube.resources import NODECLAIM
from tests.eventually import eventually
from workers.cli.dev import stack_config

REPO = Path(__file__).resolve().parents[2]


def nodeflow(stack: DevStack, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the `nodeflow` CLI against the stack; fails the test on a non-zero exit."""
    argv = [sys.executable, "-m", "workers.cli", *args, "--temporal-address", stack.temporal_address,
            "--kubeconfig", str(stack.kubeconfig)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=REPO)
    assert done.returncode == 0, f"nodeflow {' '.join(args)}: {done.stderr}"
    return done


def deployment(
    name: str,
    replicas: int,
    cpu: str = "1",
    memory: str = "1536Mi",
    extra_spec: str = "",
    annotations: dict[str, str] | None = None,
) -> str:
    """A Deployment of pause pods; `extra_spec` lines go into the pod spec, `annotations` on its pods."""
    notes = f", annotations: {json.dumps(annotations)}" if annotations else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}{notes}}}
    spec:
      terminationGracePeriodSeconds: 0
{extra_spec}
      containers:
        - name: app
          image: registry.k8s.io/pause:3.9
          resources: {{requests: {{cpu: "{cpu}", memory: {memory}}}}}
"""


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample at `url` (a Prometheus endpoint) by sample name: [(labels, value)]."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def pods_of(stack: DevStack, app: str) -> list[dict[str, Any]]:
    """The pods of Deployment `app` (label app=<app>) in namespace default."""
    return stack.kube.list(r.POD, namespace="default", label_selector=f"app={app}")


def all_instances(stack: DevStack) -> list[dict[str, Any]]:
    """Every instance moto knows, terminated ones included."""
    out: list[dict[str, Any]] = []
    for page in stack.ec2.get_paginator("describe_instances").paginate():
        for reservation in page["Reservations"]:
            out += reservation["Instances"]
    return out


def live_instances(stack: DevStack) -> list[dict[str, Any]]:
    return [i for i in all_instances(stack) if i["State"]["Name"] in ("pending", "running")]


def claim_tag(instance: dict[str, Any]) -> str:
    return next((t["Value"] for t in instance.get("Tags", []) if t["Key"] == "karpenter.sh/nodeclaim"), "")


def claim_of_node(stack: DevStack, node: str) -> dict[str, Any] | None:
    """The NodeClaim whose status names Node `node`, or None."""
    return next((c for c in stack.kube.list(r.NODECLAIM) if (c.get("status") or {}).get("nodeName") == node), None)


# A claim being terminated has its instance shut down a few seconds before the claim object goes; a
# disruption begun by an earlier test on the shared stack can be in that window when a test checks.
INVARIANT_SETTLE_SECONDS = 60.0


def assert_one_instance_per_claim(stack: DevStack) -> None:
    """The invariant crash tests protect: exactly one live instance per NodeClaim, none without one. A
    termination in flight breaks it for seconds, so it must hold within INVARIANT_SETTLE_SECONDS; a
    leaked or doubled instance stays and fails."""

    def holds() -> bool:
        claims = sorted(c["metadata"]["name"] for c in stack.kube.list(NODECLAIM))
        tags = sorted(claim_tag(i) for i in live_instances(stack))
        assert tags == claims, f"live instances by claim tag {tags} != NodeClaims {claims}"
        return True

    eventually(holds, timeout=INVARIANT_SETTLE_SECONDS, interval=1.0, what="one live instance per NodeClaim")


INTERRUPTION_QUEUE = "nodeflow-dev"  # named after the cluster, as `nodeflow dev` and Karpenter's setup do


# Leader election for stacks whose tests SIGKILL the leader: a killed leader cannot release its Lease, so
# the next leader waits out the lease duration (client-go's 15 s by default) before taking over. These
# values keep the settings' rules (lease duration > renew deadline > 1.2 x retry period) with room for a
# loaded machine; test_leader_election checks the failover against them.
FAST_FAILOVER = {"lease_duration": "8s", "renew_deadline": "6s", "retry_period": "1s"}


def default_stack(
    tmp_path_factory: pytest.TempPathFactory, name: str, worker_args: list[str] | None = None
) -> Iterator[DevStack]:
    """A stack as `nodeflow dev` runs it: the default NodePool and EC2NodeClass, the UI, and an
    interruption queue the worker consumes; `worker_args` are added to every worker's command line."""
    config = stack_config(
        state_dir=tmp_path_factory.mktemp(name),
        ui=True,
        interruption_queue=INTERRUPTION_QUEUE,
        worker_args=list(worker_args or []),
    )
    with DevStack(config) as running:
        yield running


@pytest.fixture(scope="session")
def shared_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """One stack (default NodePool and EC2NodeClass, default worker settings; one per xdist worker) for
    every module that only needs a running stack: those modules kill, restart, fault or reconfigure
    nothing of it, and each test uses its own Deployments, labels and NodePools, so tests do not see each
    other's pods."""
    yield from default_stack(tmp_path_factory, "shared-stack")


@pytest.fixture(scope="module")
def private_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """A default stack of the module's own, for modules that kill or restart its processes, inject faults
    or reconfigure what the worker runs (they override `stack` with it)."""
    yield from default_stack(tmp_path_factory, "stack")


@pytest.fixture(scope="module")
def failover_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """A default stack of the module's own whose workers fail over with FAST_FAILOVER's leader election,
    for modules that SIGKILL the leader."""
    args = [
        arg for key, value in FAST_FAILOVER.items() for arg in (f"--leader-election-{key.replace('_', '-')}", value)
    ]
    yield from default_stack(tmp_path_factory, "stack", worker_args=args)


@pytest.fixture(scope="module")
def stack(shared_stack: DevStack) -> DevStack:
    return shared_stack


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A failed test's report names the stack's processes that died under it (a worker that could not
    start, a crashed service), with their logs: the failure itself is often only a timeout."""
    outcome = yield
    report = outcome.get_result()
    stack = getattr(item, "funcargs", {}).get("stack")
    if report.failed and isinstance(stack, DevStack):
        dead = stack.dead_children()
        if dead:
            report.sections.append(("stack processes that died", "\n".join(dead)))
