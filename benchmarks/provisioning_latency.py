"""Provisioning latency on the embedded local stack: from a Deployment's pods turning pending to the
first CreateFleet returning an instance, and to every pod bound.

    python benchmarks/provisioning_latency.py --pods 10
    python benchmarks/provisioning_latency.py --pods 100

Prints one JSON object. Everything is real: Temporal dev server, the worker process, moto over HTTP,
the Kubernetes API emulator with its simulated kubelet and pod binder. Start-up is not counted: the
clock starts when the Deployment is applied, after the worker has started its provisioner and loaded
the instance-type catalog.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client

from devstack.stack import DevStack
from kube import resources as r
from workers.cli.dev import stack_config

POLL = 0.02


def deployment(replicas: int, cpu: str, memory: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: bench, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: bench}}}}
  template:
    metadata: {{labels: {{app: bench}}}}
    spec:
      containers:
        - name: app
          image: registry.k8s.io/pause:3.9
          resources: {{requests: {{cpu: "{cpu}", memory: {memory}}}}}
"""


def instance_count(stack: DevStack) -> int:
    reservations = stack.ec2.describe_instances()["Reservations"]
    return sum(len(res["Instances"]) for res in reservations)


def wait_for_provisioner(stack: DevStack, timeout: float = 60) -> None:
    """Wait until the worker is up: it has started its provisioner and loaded the instance-type catalog
    (a one-off cost at start-up, not part of provisioning latency)."""

    async def exists() -> bool:
        client = await Client.connect(stack.temporal_address)
        try:
            await client.get_workflow_handle("provisioner").describe()
            return True
        except Exception:
            return False

    log = stack.config.logs_dir / "worker.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        warmed = log.exists() and "instance type catalog loaded" in log.read_text()
        if warmed and asyncio.run(exists()):
            return
        time.sleep(0.2)
    raise SystemExit("the worker did not start its provisioner and load its catalog in time")


def measure(pods: int, cpu: str, memory: str, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as state, DevStack(stack_config(state_dir=Path(state))) as stack:
        wait_for_provisioner(stack)
        start = time.monotonic()
        stack.apply_text(deployment(pods, cpu, memory))
        first_pending = first_fleet = all_bound = None
        while time.monotonic() - start < timeout:
            now = time.monotonic() - start
            listed = stack.kube.list(r.POD, namespace="default", label_selector="app=bench")
            if first_pending is None and listed:
                first_pending = now
            if first_fleet is None and instance_count(stack) > 0:
                first_fleet = now
            if len(listed) == pods and all(p["spec"].get("nodeName") for p in listed):
                all_bound = now
                break
            time.sleep(POLL)
        claims = stack.kube.list(r.NODECLAIM)
        return {
            "pods": pods,
            "pod_cpu": cpu,
            "pod_memory": memory,
            "nodes": len(claims),
            "instance_types": sorted(
                {c["metadata"]["labels"].get("node.kubernetes.io/instance-type", "") for c in claims}
            ),
            "seconds_pending_to_first_create_fleet": round(first_fleet - (first_pending or 0), 2)
            if first_fleet is not None
            else None,
            "seconds_pending_to_all_bound": round(all_bound - (first_pending or 0), 2)
            if all_bound is not None
            else None,
            "settled": all_bound is not None,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--cpu", default="1")
    parser.add_argument("--memory", default="1536Mi")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    result = measure(args.pods, args.cpu, args.memory, args.timeout)
    print(json.dumps(result))
    return 0 if result["settled"] else 1


if __name__ == "__main__":
    sys.exit(main())
