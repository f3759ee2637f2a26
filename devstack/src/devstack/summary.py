"""The local stack's state as one JSON-ready summary, and the "settled" verdict over it. Pure:
it takes the objects as the Kubernetes API and EC2 DescribeInstances return them.

Settled means the cluster has nothing left to do:
- every Deployment and ReplicaSet has observed its latest spec and has as many pods as it wants
  (otherwise the pods it is about to create could not count as pending yet);
- every pod that is not finished (phase Succeeded/Failed) is bound to a node;
- every NodeClaim has the conditions Launched, Registered and Initialized True;
- every NodeClaim has exactly one live (pending or running) instance, and no live instance is
  without a NodeClaim (untagged, or tagged with a claim that no longer exists).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cloudprovider.types import TAG_NODECLAIM, instance_id_of

Obj = Mapping[str, Any]

REQUIRED_CONDITIONS = ("Launched", "Registered", "Initialized")
LIVE_STATES = ("pending", "running")
_FINISHED_POD_PHASES = ("Succeeded", "Failed")
_LABEL_NODEPOOL = "karpenter.sh/nodepool"
_LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
_LABEL_ZONE = "topology.kubernetes.io/zone"
_LABEL_CAPACITY_TYPE = "karpenter.sh/capacity-type"


def pod_counts(pods: Iterable[Obj]) -> dict[str, int]:
    """{"total", "bound", "pending"} over pods that are not finished; bound = has spec.nodeName."""
    live = [p for p in pods if (p.get("status") or {}).get("phase") not in _FINISHED_POD_PHASES]
    bound = sum(1 for p in live if (p.get("spec") or {}).get("nodeName"))
    return {"total": len(live), "bound": bound, "pending": len(live) - bound}


def _incomplete_workload(workload: Obj) -> str | None:
    """Why a Deployment/ReplicaSet has not yet created its pods, or None when it has."""
    meta = workload.get("metadata") or {}
    status = workload.get("status") or {}
    wanted = int((workload.get("spec") or {}).get("replicas", 1))
    have = int(status.get("replicas", 0))
    observed = int(status.get("observedGeneration", 0))
    where = f"{workload.get('kind', 'workload')} {meta.get('namespace', '')}/{meta.get('name', '')}"
    if observed < int(meta.get("generation", 1)):
        return f"{where}: its controller has not observed generation {meta.get('generation', 1)} yet"
    if have != wanted:
        return f"{where}: {have}/{wanted} pods created"
    return None


def workload_counts(workloads: Iterable[Obj]) -> dict[str, Any]:
    """{"total", "complete", "incomplete": [reasons]} over Deployments and ReplicaSets."""
    items = list(workloads)
    reasons = [r for w in items if (r := _incomplete_workload(w)) is not None]
    return {"total": len(items), "complete": len(items) - len(reasons), "incomplete": reasons}


def node_claim_row(claim: Obj) -> dict[str, Any]:
    """The summary row of one NodeClaim object."""
    meta = claim.get("metadata") or {}
    labels = meta.get("labels") or {}
    status = claim.get("status") or {}
    conditions = {str(c.get("type")): str(c.get("status")) for c in status.get("conditions") or []}
    return {
        "name": meta.get("name", ""),
        "nodePool": labels.get(_LABEL_NODEPOOL),
        "instanceType": labels.get(_LABEL_INSTANCE_TYPE),
        "zone": labels.get(_LABEL_ZONE),
        "capacityType": labels.get(_LABEL_CAPACITY_TYPE),
        "providerID": status.get("providerID"),
        "nodeName": status.get("nodeName"),
        "conditions": dict(sorted(conditions.items())),
    }


def _instance_id_of(provider_id: str | None) -> str | None:
    return instance_id_of(provider_id) if provider_id else None


def instance_row(instance: Obj, claim_by_instance_id: Mapping[str, str]) -> dict[str, Any]:
    """The summary row of one DescribeInstances instance. Its claim is the `karpenter.sh/nodeclaim`
    tag, else the claim whose providerID names the instance, else None."""
    tags = {t.get("Key"): t.get("Value") for t in instance.get("Tags") or []}
    instance_id = str(instance.get("InstanceId", ""))
    return {
        "id": instance_id,
        "type": instance.get("InstanceType"),
        "zone": (instance.get("Placement") or {}).get("AvailabilityZone"),
        "state": (instance.get("State") or {}).get("Name"),
        "nodeClaim": tags.get(TAG_NODECLAIM) or claim_by_instance_id.get(instance_id),
    }


def unsettled_reasons(summary: Mapping[str, Any]) -> list[str]:
    """Why the summarized cluster is not settled, in a stable order; empty when it is settled."""
    reasons: list[str] = list(summary.get("workloads", {}).get("incomplete", []))
    pending = summary["pods"]["pending"]
    if pending:
        reasons.append(f"{pending} pod(s) not bound to a node")
    claim_names = [c["name"] for c in summary["nodeClaims"]]
    live = [i for i in summary["instances"] if i["state"] in LIVE_STATES]
    for claim in summary["nodeClaims"]:
        missing = [t for t in REQUIRED_CONDITIONS if claim["conditions"].get(t) != "True"]
        if missing:
            reasons.append(f"NodeClaim {claim['name']}: {', '.join(missing)} not True")
        count = sum(1 for i in live if i["nodeClaim"] == claim["name"])
        if count != 1:
            reasons.append(f"NodeClaim {claim['name']}: {count} live instances, want exactly 1")
    for instance in live:
        if instance["nodeClaim"] not in claim_names:
            owner = instance["nodeClaim"] or "no NodeClaim"
            reasons.append(f"instance {instance['id']} is {instance['state']} for {owner} (not an existing claim)")
    return reasons


def build_summary(
    pods: Iterable[Obj],
    node_claims: Iterable[Obj],
    instances: Iterable[Obj],
    errors: Iterable[str] = (),
    seconds: float = 0.0,
    workloads: Iterable[Obj] = (),
) -> dict[str, Any]:
    """The summary: {"settled", "seconds", "pods", "workloads", "nodeClaims", "instances", "errors",
    "unsettled"}; `workloads` are the Deployments and ReplicaSets.

    Instances in state `terminated` are left out; claims are sorted by name, instances by id."""
    claims = sorted((node_claim_row(c) for c in node_claims), key=lambda row: row["name"])
    by_instance_id = {iid: row["name"] for row in claims if (iid := _instance_id_of(row["providerID"])) is not None}
    rows = [instance_row(i, by_instance_id) for i in instances]
    live_rows = sorted((r for r in rows if r["state"] != "terminated"), key=lambda row: row["id"])
    summary: dict[str, Any] = {
        "settled": False,
        "seconds": round(seconds, 3),
        "pods": pod_counts(pods),
        "workloads": workload_counts(workloads),
        "nodeClaims": claims,
        "instances": live_rows,
        "errors": list(errors),
    }
    summary["unsettled"] = unsettled_reasons(summary)
    summary["settled"] = not summary["unsettled"]
    return summary


def is_settled(summary: Mapping[str, Any]) -> bool:
    """True when `summary` (as built by build_summary) describes a settled cluster."""
    return not unsettled_reasons(summary)
