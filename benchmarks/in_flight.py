"""One solve with NodeClaims in flight: what every provisioning round and every consolidation simulation
pays for the claims launched but not yet registered (a scale-up of hundreds of one-pod nodes has hundreds).

    python benchmarks/in_flight.py [--claims 200] [--runs 5]

The local stack's default NodePool and EC2NodeClass, the built-in us-west-2 catalog, `--claims` NodeClaims of
that pool with no status yet (as CreateFleet has not answered), each allowing either capacity type, and one
pending 500m pod. Prints one JSON object: claims, runs, cpu_seconds_per_solve_min and _median (process CPU
of `scheduling.solve`), cpu_seconds_per_solve_median_kept_options (the same solves sharing one
scheduling.provisioning.catalog.OptionCache, each over its own copy of the node class, as the worker's
activities read it again each time), and targets_met (median under 0.25 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apis.ec2nodeclass import EC2NodeClass
from apis.manifests import load_documents
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from cloudprovider.aws.instancetypes.catalog import load_builtin_catalog
from devstack.stack.core import DEFAULTS_FILE
from scheduling import SchedulingInput, solve
from scheduling.provisioning.catalog import OptionCache

TARGET_SECONDS = 0.25


def claims_in_flight(count: int) -> list[NodeClaim]:
    return [
        NodeClaim.model_validate(
            {
                "metadata": {"name": f"default-{i:05d}", "labels": {"karpenter.sh/nodepool": "default"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]}
                    ],
                },
            }
        )
        for i in range(count)
    ]


def scheduling_input(claims: int) -> SchedulingInput:
    docs = load_documents(DEFAULTS_FILE.read_text(), {"CLUSTER_NAME": "bench"}, source=str(DEFAULTS_FILE))
    pool_doc: dict[str, Any] = next(d for d in docs if d["kind"] == "NodePool")
    pool_doc["spec"] = {**pool_doc["spec"], "limits": {"cpu": 100_000}}  # the limit is not what is measured
    pending = {
        "metadata": {"name": "pending", "namespace": "default", "labels": {}},
        "spec": {"containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "500m"}}}]},
    }
    return SchedulingInput(
        pods=[pending],
        node_pools=[NodePool.model_validate(pool_doc)],
        node_classes=[EC2NodeClass.model_validate(next(d for d in docs if d["kind"] == "EC2NodeClass"))],
        instance_types=load_builtin_catalog(),
        node_claims=claims_in_flight(claims),
    )


def run(claims: int, runs: int) -> dict[str, Any]:
    inp = scheduling_input(claims)
    solve(inp)  # warm: lazily built converters and caches
    seconds = []
    for _ in range(runs):
        started = time.process_time()
        solve(inp)
        seconds.append(time.process_time() - started)
    median = statistics.median(seconds)
    options, kept = OptionCache(), []
    solve(inp, options)
    for _ in range(runs):
        again = inp.model_copy(update={"node_classes": [nc.model_copy(deep=True) for nc in inp.node_classes]})
        started = time.process_time()
        solve(again, options)
        kept.append(time.process_time() - started)
    return {
        "claims": claims,
        "runs": runs,
        "cpu_seconds_per_solve_min": round(min(seconds), 4),
        "cpu_seconds_per_solve_median": round(median, 4),
        "cpu_seconds_per_solve_median_kept_options": round(statistics.median(kept), 4),
        "targets": {"cpu_seconds_per_solve_median": TARGET_SECONDS},
        "targets_met": median < TARGET_SECONDS,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=200, help="NodeClaims in flight (default 200)")
    parser.add_argument("--runs", type=int, default=5, help="timed solves (default 5)")
    args = parser.parse_args()
    print(json.dumps(run(args.claims, args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
