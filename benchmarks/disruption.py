"""Disruption benchmarks. Each run prints one JSON object on stdout; see benchmarks/README.md.

    python benchmarks/disruption.py --nodes 1000 --pods 10000      (or --decision: the default)
        The consolidation decision alone (pure core), below.
    python benchmarks/disruption.py --empty-nodes 200
        On the local stack: N empty nodes under a 100% budget, seconds from the last pod gone until every
        NodeClaim, Node and instance is gone (target <= 120 s). See benchmarks/disruption_stack.py.
    python benchmarks/disruption.py --replace-wait 3 [--node-ready-delay 30]
        On the local stack: 3 manual replaces, each one's seconds from its replacement Initialized until
        the original NodeClaim is deleting (the wait for replacements; benchmarks/disruption_stack.py).
    python benchmarks/disruption.py --scale-down --pods 1000
        On the local stack: the scale-out workload of benchmarks/scale.py scaled to 10% and consolidated,
        then the fleet's price over the LP lower bound of what remains (target <= 1.15).

The decision benchmark:

Builds a snapshot of `--nodes` initialized on-demand Karpenter nodes in one on-demand NodePool (budget
100%, consolidateAfter 0s) from a 400-type catalog (four memory-per-cpu ratios x 1..100 vCPUs, on-demand
and spot in three zones, as `benchmarks/scheduling.py`), each running `--pods / --nodes` pods drawn with a
fixed seed from cpu {100, 250, 500, 1000}m x memory {128Mi, 256Mi, 512Mi, 1Gi} (about 4.6 vCPU per node),
then times `scheduling.disruption.decide` (its candidate filtering, budgets and every simulation) on:

- full: 5-vCPU nodes whose cpu is fully requested: nothing to consolidate, so every method runs to its
  limit (the multi-node binary search, then every single-node simulation allowed): the worst case.
- packed: 5-vCPU nodes, ~92% of cpu requested on average (some nodes far less).
- underutilized: 10-vCPU nodes, ~46% of cpu requested: multi-node consolidation deletes 100 nodes.

Prints one JSON object: nodes, pods, and per shape the seconds, the command (method, action, candidates),
the number of scheduling simulations and whether the time budget ran out.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python benchmarks/disruption.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from scheduling.disruption import DisruptionInput, decide
from scheduling.types import SchedulingInput

SEED = 42
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")
CPUS = (100, 250, 500, 1000)
MEMORIES_MI = (128, 256, 512, 1024)
MEMORY_PER_CPU_GI = (2, 4, 8, 16)
NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
STARTED = "2026-01-05T10:00:00Z"
Obj = dict[str, Any]


def instance_types(count: int = 400) -> list[InstanceType]:
    out = []
    sizes = count // len(MEMORY_PER_CPU_GI)
    for family, ratio in enumerate(MEMORY_PER_CPU_GI):
        for size in range(1, sizes + 1):
            price = round((0.031 * size + 0.0042 * size * ratio) * (1 - 0.02 * family), 5)
            offerings = [
                {"zone": z, "capacityType": ct, "price": price if ct == "on-demand" else round(price * 0.45, 5)}
                for z in ZONES
                for ct in ("on-demand", "spot")
            ]
            capacity = {"cpu": str(size), "memory": f"{size * ratio}Gi", "pods": "110"}
            out.append(
                InstanceType.model_validate(
                    {"name": f"fake-{family}-{size:03d}", "capacity": capacity, "offerings": offerings}
                )
            )
    return out


def _pool() -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                       "name": "default"},
                                      "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                                        "values": ["on-demand"]}]}},
                "disruption": {"budgets": [{"nodes": "100%"}]},
            },
        }
    )  # fmt: skip


def _node_class() -> EC2NodeClass:
    terms = [{"tags": {"karpenter.sh/discovery": "bench"}}]
    spec = {"role": "R", "subnetSelectorTerms": terms, "securityGroupSelectorTerms": terms,
            "amiSelectorTerms": [{"alias": "al2023@latest"}]}  # fmt: skip
    return EC2NodeClass.model_validate({"metadata": {"name": "default"}, "spec": spec})


def _machine(name: str, it: InstanceType, zone: str) -> tuple[Obj, NodeClaim]:
    capacity = {k: str(v) for k, v in it.capacity.items()}
    labels = {
        "kubernetes.io/hostname": name,
        "topology.kubernetes.io/zone": zone,
        "node.kubernetes.io/instance-type": it.name,
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/initialized": "true",
    }
    node = {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": {"allocatable": capacity}}
    claim = NodeClaim.model_validate(
        {
            "metadata": {"name": f"claim-{name}", "labels": {"karpenter.sh/nodepool": "default"},
                         "creationTimestamp": STARTED},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
            "status": {"nodeName": name, "conditions": [{"type": "Initialized", "status": "True",
                                                          "lastTransitionTime": STARTED}]},
        }
    )  # fmt: skip
    return node, claim


def _pod(name: str, node: str, cpu: int, memory: int) -> Obj:
    container = {"name": "app", "image": "app", "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}}}
    return {
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name.split("-", 1)[0]}},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running", "startTime": STARTED},
    }


def snapshot(nodes: int, pods: int, node_cpu: int, full: bool = False) -> DisruptionInput:
    """`nodes` on-demand nodes of the 2 GiB/vCPU type (the cheapest per vCPU) with `node_cpu` vCPUs, and
    `pods / nodes` pods on each (16 pod shapes, as Deployments repeat one spec; with `full`, one shape
    sized to fill the node's cpu exactly)."""
    rng = random.Random(SEED)
    types = instance_types()
    it = next(t for t in types if t.name == f"fake-0-{node_cpu:03d}")
    machines = [_machine(f"node-{i:05d}", it, ZONES[i % len(ZONES)]) for i in range(nodes)]
    per_node = pods // nodes
    bound = []
    for i in range(nodes):
        for j in range(per_node):
            cpu, memory = rng.choice(CPUS), rng.choice(MEMORIES_MI)
            if full:
                cpu, memory = node_cpu * 1000 // per_node, 512
            bound.append(_pod(f"app{cpu}x{memory}-{i:05d}-{j:03d}", f"node-{i:05d}", cpu, memory))
    cluster = SchedulingInput(
        bound_pods=bound,
        nodes=[n for n, _ in machines],
        node_claims=[c for _, c in machines],
        node_pools=[_pool()],
        node_classes=[_node_class()],
        instance_types=types,
    )
    return DisruptionInput(cluster=cluster, now=NOW)


def measure(inp: DisruptionInput) -> dict[str, Any]:
    started = time.perf_counter()
    decision = decide(inp)
    seconds = time.perf_counter() - started
    command = decision.command
    return {
        "seconds": round(seconds, 3),
        "method": command.method if command else None,
        "action": command.action if command else None,
        "candidates": len(command.candidates) if command else 0,
        "simulations": decision.simulations,
        "timed_out": decision.timed_out,
    }


def run(nodes: int, pods: int) -> dict[str, Any]:
    return {
        "nodes": nodes,
        "pods": pods,
        "full": measure(snapshot(nodes, pods, node_cpu=5, full=True)),
        "packed": measure(snapshot(nodes, pods, node_cpu=5)),
        "underutilized": measure(snapshot(nodes, pods, node_cpu=10)),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; one mode: the decision (default), `--empty-nodes N` or `--scale-down`."""
    parser = argparse.ArgumentParser(
        prog="python benchmarks/disruption.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--decision", action="store_true", help="the pure consolidation decision (the default)")
    mode.add_argument("--empty-nodes", type=int, metavar="N", help="on the local stack: N empty nodes deleted")
    mode.add_argument("--scale-down", action="store_true", help="on the local stack: price after scaling to 10%%")
    mode.add_argument(
        "--replace-wait", type=int, metavar="N", help="on the local stack: N replaces, replacement up -> original going"
    )
    parser.add_argument("--node-ready-delay", type=float, default=30.0, help="--replace-wait: seconds to Ready (30)")
    parser.add_argument("--nodes", type=int, default=1000, help="decision: number of nodes (default 1000)")
    parser.add_argument(
        "--pods", type=int, default=None, help="decision: bound pods (10000); --scale-down: scale-out pods (1000)"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="stack modes: give up after this long (900)")
    parser.add_argument("--state-dir", type=Path, default=None, help="stack modes: keep state and logs here")
    args = parser.parse_args(argv)
    if args.empty_nodes is not None and args.empty_nodes < 1:
        parser.error(f"--empty-nodes {args.empty_nodes}: give at least 1")
    if args.replace_wait is not None and args.replace_wait < 1:
        parser.error(f"--replace-wait {args.replace_wait}: give at least 1")
    if args.node_ready_delay < 0:
        parser.error(f"--node-ready-delay {args.node_ready_delay}: give 0 or more seconds")
    if args.scale_down:
        args.pods = 1000 if args.pods is None else args.pods
        if args.pods < 2 or args.pods % 2:
            parser.error(f"--pods {args.pods}: give an even number, at least 2 (half the pods have each shape)")
    elif args.pods is None:
        args.pods = 10000
    if args.nodes < 1 or args.pods < 1:
        parser.error("--nodes and --pods: give at least 1")
    if args.timeout <= 0:
        parser.error(f"--timeout {args.timeout}: give a positive number of seconds")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.empty_nodes is not None:
        from benchmarks.disruption_stack import run_empty

        result = run_empty(args.empty_nodes, args.timeout, args.state_dir)
        done = result.get("seconds_to_all_gone") is not None
    elif args.replace_wait is not None:
        from benchmarks.disruption_stack import run_replace_wait

        result = run_replace_wait(args.replace_wait, args.node_ready_delay, args.timeout, args.state_dir)
        done = result["seconds_initialized_to_original_deleting"]["count"] == args.replace_wait
    elif args.scale_down:
        from benchmarks.disruption_stack import run_scale_down

        result = run_scale_down(args.pods, args.timeout, args.state_dir)
        done = result.get("price_over_lower_bound") is not None
    else:
        result, done = run(args.nodes, args.pods), True
    print(json.dumps(result))
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
