"""Scheduling benchmark: the shape of Karpenter's own (400 instance types; pods in five even groups).

    python benchmarks/scheduling.py --pods 5000

Groups: plain; zone topology spread (maxSkew 1); hostname topology spread (maxSkew 1); zone pod
self-affinity; hostname anti-affinity on a label the group shares. cpu is drawn from
{100, 250, 500, 1000, 1500}m and memory from {100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi} with a fixed seed.

Prints one JSON object: pods, seconds, pods_per_second, nodes, price (the whole plan), plain_pods,
plain_price (the plain group scheduled alone) and lower_bound_price (the LP relaxation of the plain group:
fractional nodes of any type, HiGHS), and their ratio.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from apis.nodepool import NodePool
from scheduling import Plan, SchedulingInput, solve

SEED = 42
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")
CPUS = ("100m", "250m", "500m", "1000m", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
GROUPS = ("plain", "zone-spread", "hostname-spread", "zone-affinity", "hostname-anti-affinity")
MEMORY_PER_CPU_GI = (2, 4, 8, 16)
Obj = dict[str, Any]


def instance_types(count: int = 400) -> list[InstanceType]:
    """`count` types: four memory-per-cpu ratios x sizes of 1..100 vCPUs; price linear in cpu and memory
    with a small per-family discount, on-demand and spot in three zones; 110 pods each."""
    out = []
    sizes = count // len(MEMORY_PER_CPU_GI)
    for family, ratio in enumerate(MEMORY_PER_CPU_GI):
        for size in range(1, sizes + 1):
            cpu, memory = size, size * ratio
            price = round((0.031 * cpu + 0.0042 * memory) * (1 - 0.02 * family), 5)
            offerings = [
                {"zone": z, "capacityType": ct, "price": price if ct == "on-demand" else round(price * 0.45, 5)}
                for z in ZONES
                for ct in ("on-demand", "spot")
            ]
            out.append(
                InstanceType.model_validate(
                    {
                        "name": f"fake-{family}-{size:03d}",
                        "capacity": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110"},
                        "offerings": offerings,
                    }
                )
            )
    return out


def _pod(name: str, group: str, cpu: str, memory: str) -> Obj:
    labels = {"app": group}
    spec: Obj = {
        "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    }
    selector = {"matchLabels": {"app": group}}
    if group in ("zone-spread", "hostname-spread"):
        key = "topology.kubernetes.io/zone" if group == "zone-spread" else "kubernetes.io/hostname"
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
        ]
    elif group == "zone-affinity":
        term = {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": selector}
        spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    elif group == "hostname-anti-affinity":
        term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec}


def workload(count: int, seed: int = SEED) -> list[Obj]:
    rng = random.Random(seed)
    out = []
    for index in range(count):
        group = GROUPS[index * len(GROUPS) // count]
        out.append(_pod(f"{group}-{index:06d}", group, rng.choice(CPUS), rng.choice(MEMORIES)))
    return out


def _input(pods: list[Obj], types: list[InstanceType]) -> SchedulingInput:
    pool = NodePool.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                             "name": "default"}}}},
        }
    )  # fmt: skip
    node_class = EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "role": "KarpenterNodeRole",
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
            },
        }
    )
    return SchedulingInput(pods=pods, node_pools=[pool], node_classes=[node_class], instance_types=types)


def lower_bound(pods: list[Obj], types: list[InstanceType]) -> float:
    """The LP relaxation of packing `pods` (cpu, memory and pod count) on `types` at their cheapest
    offering: see `lp_lower_bound`."""
    from apis.values.quantity import to_units

    demand = {"cpu": 0, "memory": 0, "pods": len(pods)}
    for pod in pods:
        requests = pod["spec"]["containers"][0]["resources"]["requests"]
        demand["cpu"] += to_units("cpu", requests["cpu"])
        demand["memory"] += to_units("memory", requests["memory"])
    offers = [(min(o.price for o in it.offerings if o.available), it.allocatable()) for it in types]
    return lp_lower_bound(demand, offers)


def lp_lower_bound(
    demand: Mapping[str, int], offers: Sequence[tuple[float, Mapping[str, int]]], integral: bool = False
) -> float:
    """The LP relaxation: minimise sum(price x) subject to sum(allocatable x) >= demand for each resource
    of `demand` (canonical units: millicores, bytes, counts), x >= 0 (fractional nodes), over `offers`
    of (hourly price, allocatable). Every integral packing costs at least this. With `integral`, whole
    nodes (the integer program): the cheapest fleet whose summed allocatable covers the demand."""
    from scipy.optimize import LinearConstraint, milp

    names = sorted(demand)
    scale = {"cpu": 1000, "memory": 2**30}
    prices = [price for price, _ in offers]
    matrix = [[alloc.get(n, 0) / scale.get(n, 1) for _, alloc in offers] for n in names]
    floor = [demand[n] / scale.get(n, 1) for n in names]
    result = milp(prices, constraints=LinearConstraint(matrix, lb=floor), integrality=[int(integral)] * len(offers))
    if not result.success:
        raise RuntimeError(f"LP failed: {result.message}")
    return float(result.fun)


def plan_price(plan: Plan) -> float:
    return round(sum(claim.price for claim in plan.node_claims), 4)


def run(count: int) -> dict[str, Any]:
    types = instance_types()
    pods = workload(count)
    inp = _input(pods, types)
    started = time.perf_counter()
    plan = solve(inp)
    seconds = time.perf_counter() - started
    plain = [p for p in pods if p["metadata"]["labels"]["app"] == "plain"]
    plain_plan = solve(_input(plain, types))
    bound = lower_bound(plain, types)
    plain_price = plan_price(plain_plan)
    return {
        "pods": count,
        "seconds": round(seconds, 3),
        "pods_per_second": round(count / seconds, 1),
        "nodes": len(plan.node_claims),
        "unschedulable": len(plan.unschedulable),
        "price": plan_price(plan),
        "plain_pods": len(plain),
        "plain_nodes": len(plain_plan.node_claims),
        "plain_price": plain_price,
        "lower_bound_price": round(bound, 4),
        "plain_price_over_lower_bound": round(plain_price / bound, 4) if bound else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=5000, help="number of pending pods (default 5000)")
    args = parser.parse_args()
    print(json.dumps(run(args.pods)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
