"""A small cluster as manifests, for `nodeflow explain` and `nodeflow simulate --disruption` tests.

Judged at NOW (Monday 2026-01-05 12:00 UTC), every node launched an hour earlier:

- NodePool `general` (on-demand, consolidateAfter 0s, budget 100%):
  - ip-10-0-1-1 m5.2xlarge, pods web-0 and web-1 (1.5 cpu each): the others are full, so it is replaced
    by a cheaper c5.xlarge ($0.384/h -> $0.17/h);
  - ip-10-0-1-2 m5.xlarge, pods web-2 and `critical` (do-not-disrupt "2h": blocked until 13:00);
  - ip-10-0-1-3 m5.large, empty: deleted first (Emptiness);
  - ip-10-0-1-4 m5.xlarge, pod db-0 under PDB `db` (0 disruptions allowed); its NodeClaim is Drifted.
- NodePool `batch` (tainted batch=true:NoSchedule, budget nodes "0" Monday-Friday 09:00 for 8h):
  - ip-10-0-2-1 m5.2xlarge, pod job-0: the budget blocks it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from tests.unit.scheduling.builders import catalog

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
NOW_TEXT = "2026-01-05T12:00:00Z"
HOUR_AGO = "2026-01-05T11:00:00Z"
ZONE = "us-west-2a"
CAPACITY = {
    "m5.large": {"cpu": "2", "memory": "8Gi", "pods": "110"},
    "m5.xlarge": {"cpu": "4", "memory": "16Gi", "pods": "110"},
    "m5.2xlarge": {"cpu": "8", "memory": "32Gi", "pods": "110"},
}
NODES = {  # node -> (pool, instance type)
    "ip-10-0-1-1": ("general", "m5.2xlarge"),
    "ip-10-0-1-2": ("general", "m5.xlarge"),
    "ip-10-0-1-3": ("general", "m5.large"),
    "ip-10-0-1-4": ("general", "m5.xlarge"),
    "ip-10-0-2-1": ("batch", "m5.2xlarge"),
}
Obj = dict[str, Any]
BATCH_TAINTS = [{"key": "batch", "value": "true", "effect": "NoSchedule"}]


def claim_name(node: str) -> str:
    """ip-10-0-1-1 -> general-11."""
    return f"{NODES[node][0]}-{node.split('-', 3)[3].replace('-', '')}"


def node_pool(name: str, budgets: list[Obj], taints: list[Obj] | None = None) -> Obj:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                    "taints": taints or [],
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
                "budgets": budgets,
            },
        },
    }


def node(name: str) -> Obj:
    pool, instance_type = NODES[name]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "creationTimestamp": HOUR_AGO,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": ZONE,
                "node.kubernetes.io/instance-type": instance_type,
                "karpenter.sh/capacity-type": "on-demand",
                "karpenter.sh/nodepool": pool,
                "karpenter.sh/initialized": "true",
            },
        },
        "spec": {"providerID": f"aws:///{ZONE}/i-{name}", "taints": BATCH_TAINTS if pool == "batch" else []},
        "status": {
            "allocatable": CAPACITY[instance_type],
            "capacity": CAPACITY[instance_type],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def node_claim(name: str, drifted: bool = False) -> Obj:
    conditions = [{"type": "Initialized", "status": "True", "lastTransitionTime": HOUR_AGO}]
    if drifted:
        conditions.append(
            {
                "type": "Drifted",
                "status": "True",
                "reason": "NodePoolDrifted",
                "message": "the NodePool template changed",
                "lastTransitionTime": HOUR_AGO,
            }
        )
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": claim_name(name),
            "creationTimestamp": HOUR_AGO,
            "labels": {"karpenter.sh/nodepool": NODES[name][0]},
        },
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
        "status": {"nodeName": name, "providerID": f"aws:///{ZONE}/i-{name}", "conditions": conditions},
    }


def pod(name: str, node_name: str, cpu: str, labels: Obj | None = None, annotations: Obj | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": labels or {"app": name.rsplit("-", 1)[0]},
            "annotations": annotations or {},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u"}],
        },
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
        "status": {"phase": "Running", "startTime": HOUR_AGO},
    }


def documents() -> list[Obj]:
    """Every object of the cluster, as `kubectl get -o yaml` would give them."""
    docs: list[Obj] = [
        node_pool("general", [{"nodes": "100%"}]),
        node_pool("batch", [{"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}], BATCH_TAINTS),
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "role": "KarpenterNodeRole-test",
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
            },
        },
    ]
    for name in NODES:
        docs.append(node(name))
        docs.append(node_claim(name, drifted=name == "ip-10-0-1-4"))
    docs += [
        pod("web-0", "ip-10-0-1-1", "1500m"),
        pod("web-1", "ip-10-0-1-1", "1500m"),
        pod("web-2", "ip-10-0-1-2", "2"),
        pod("critical", "ip-10-0-1-2", "1500m", annotations={"karpenter.sh/do-not-disrupt": "2h"}),
        pod("db-0", "ip-10-0-1-4", "3500m", labels={"app": "db"}),
        {
            **pod("job-0", "ip-10-0-2-1", "7"),
            "spec": {
                **pod("job-0", "ip-10-0-2-1", "7")["spec"],
                "tolerations": [{"key": "batch", "operator": "Exists"}],
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": 0},
            "status": {"disruptionsAllowed": 0},
        },
    ]
    return docs


def write_cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(documents()))
    return path


def write_catalog(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump([it.model_dump(mode="json", by_alias=True) for it in catalog()]))
    return path
