"""The solver's plan does not depend on the hash seed: set and dict-of-set iteration order changes with
PYTHONHASHSEED, so a `solve() == solve()` in one process cannot see an ordering bug; two processes can."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.unit.scheduling.builders import node, node_pool, pod, pods, schedule

REPO = Path(__file__).resolve().parents[3]
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CT = "karpenter.sh/capacity-type"
ARCH = "kubernetes.io/arch"
AMD64 = {"key": ARCH, "operator": "In", "values": ["amd64"]}


def spread(app: str, key: str, skew: int = 1, when: str = "DoNotSchedule") -> list[dict[str, Any]]:
    selector = {"matchLabels": {"app": app}}
    return [{"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector}]


def term(app: str, key: str) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


def mixed_plan_json() -> str:
    """A mixed workload over several NodePools: zone and hostname spread, required and preferred
    anti-affinity, zone affinity to running pods, a GPU and an arm64 workload, running nodes with room,
    and pods that fit nowhere."""
    pools = [
        node_pool("general", weight=10, requirements=[{"key": CT, "operator": "In", "values": ["on-demand"]}, AMD64]),
        node_pool("spot", weight=5, requirements=[{"key": CT, "operator": "In", "values": ["spot"]}, AMD64]),
        node_pool("arm", requirements=[{"key": ARCH, "operator": "In", "values": ["arm64"]}],
                  taints=[{"key": "arm", "effect": "NoSchedule"}]),
        node_pool("gpu", labels={"accel": "gpu"}, taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]),
    ]  # fmt: skip
    arm_toleration = [{"key": "arm", "operator": "Exists", "effect": "NoSchedule"}]
    gpu_toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pending = [
        *pods("web", 9, cpu="500m", memory="512Mi", labels={"app": "web"},
              topologySpreadConstraints=spread("web", ZONE)),
        *pods("api", 5, cpu="1", memory="2Gi", labels={"app": "api"},
              affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("api", HOST)]}}),
        *pods("cache", 4, cpu="250m", memory="4Gi", labels={"app": "cache"},
              topologySpreadConstraints=spread("cache", HOST, skew=2, when="ScheduleAnyway"),
              affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("db", ZONE)]}}),
        *pods("batch", 12, cpu="2", memory="1Gi", labels={"app": "batch"},
              affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                  {"weight": 50, "podAffinityTerm": term("web", HOST)}]}}),
        *pods("arm", 3, cpu="500m", memory="1Gi", labels={"app": "arm"}, tolerations=arm_toleration,
              nodeSelector={ARCH: "arm64"}),
        *pods("train", 2, cpu="1", memory="4Gi", labels={"app": "train"}, tolerations=gpu_toleration,
              requests={"nvidia.com/gpu": "1"}, nodeSelector={"accel": "gpu"}),
        *pods("spotty", 4, cpu="1", memory="1Gi", labels={"app": "spotty"}, nodeSelector={CT: "spot"},
              topologySpreadConstraints=spread("spotty", CT)),
        pod("huge", cpu="64", memory="1Ti"),
        pod("nowhere", nodeSelector={"no-such-label": "x"}),
    ]  # fmt: skip
    nodes = [node("n1", cpu="4", memory="16Gi"), node("n2", cpu="2", memory="8Gi", labels={ZONE: "us-west-2b"})]
    bound = [
        pod("db-0", cpu="1", memory="2Gi", labels={"app": "db"}, node_name="n1"),
        pod("web-old", cpu="500m", memory="512Mi", labels={"app": "web"}, node_name="n2"),
    ]
    return schedule(pending, pools, nodes=nodes, bound_pods=bound).model_dump_json(indent=1)


def plan_with_hash_seed(seed: str) -> str:
    code = "from tests.unit.scheduling.test_determinism import mixed_plan_json; print(mixed_plan_json())"
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_workload_exercises_every_pool_and_leaves_pods_pending() -> None:
    plan = mixed_plan_json()
    for name in ("general", "spot", "arm", "gpu"):
        assert f'"nodePool": "{name}"' in plan, name
    assert '"default/huge"' in plan and '"default/nowhere"' in plan and '"n1"' in plan


def test_the_same_input_gives_the_same_plan_under_different_hash_seeds() -> None:
    first, second = plan_with_hash_seed("1"), plan_with_hash_seed("2")
    assert first == second
