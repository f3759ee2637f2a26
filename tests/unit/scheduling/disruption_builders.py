"""Builders for disruption tests: Karpenter nodes with their NodeClaims, bound pods, PDBs, a snapshot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from apis.instancetype import InstanceType
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from scheduling.disruption import Decision, DisruptionInput, Limits, decide
from scheduling.types import SchedulingInput
from tests.unit.scheduling.builders import ZONES, catalog, node_class, node_pool, pod

Obj = dict[str, Any]
NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # a Monday, 12:00 UTC
HOUR_AGO = NOW - timedelta(hours=1)


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def on_demand_pool(name: str = "default", **spec: Any) -> NodePool:
    """A pool that launches on-demand only (replacements stay on-demand)."""
    reqs = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
    return node_pool(name, requirements=reqs, **spec)


def budget_pool(nodes: str = "100%", name: str = "default", on_demand: bool = True, **spec: Any) -> NodePool:
    disruption = {"budgets": [{"nodes": nodes}], **spec.pop("disruption", {})}
    return (on_demand_pool if on_demand else node_pool)(name, disruption=disruption, **spec)


def karpenter_node(
    name: str,
    instance_type: str,
    types: list[InstanceType] | None = None,
    pool: str = "default",
    capacity_type: str = "on-demand",
    drifted: bool = False,
    initialized: bool = True,
    node_annotations: dict[str, str] | None = None,
    claim_annotations: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    deleting: bool = False,
    last_pod_event: datetime | None = None,
    termination_grace_period: str | None = None,
) -> tuple[Obj, NodeClaim]:
    """A registered Node and its NodeClaim, launched an hour before NOW, allocatable = the type's capacity."""
    it = next(t for t in (types or catalog()) if t.name == instance_type)
    capacity = {k: str(v) for k, v in it.capacity.items()}
    labels = {
        "kubernetes.io/hostname": name,
        "topology.kubernetes.io/zone": ZONES[0],
        "node.kubernetes.io/instance-type": instance_type,
        "karpenter.sh/capacity-type": capacity_type,
        "karpenter.sh/nodepool": pool,
    }
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    meta: Obj = {"name": name, "labels": labels, "annotations": node_annotations or {}}
    if deleting:
        meta["deletionTimestamp"] = stamp(NOW)
    node = {
        "metadata": meta,
        "spec": {"providerID": f"aws:///{ZONES[0]}/i-{name}", "taints": taints or []},
        "status": {"allocatable": capacity, "capacity": capacity},
    }
    conditions = []
    if initialized:
        conditions.append({"type": "Initialized", "status": "True", "lastTransitionTime": stamp(HOUR_AGO)})
    if drifted:
        conditions.append(
            {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted", "lastTransitionTime": stamp(HOUR_AGO)}
        )
    status: Obj = {"nodeName": name, "providerID": f"aws:///{ZONES[0]}/i-{name}", "conditions": conditions}
    if last_pod_event is not None:
        status["lastPodEventTime"] = stamp(last_pod_event)
    claim_spec: Obj = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    if termination_grace_period:
        claim_spec["terminationGracePeriod"] = termination_grace_period
    claim = NodeClaim.model_validate(
        {
            "metadata": {
                "name": f"claim-{name}",
                "labels": {"karpenter.sh/nodepool": pool},
                "annotations": claim_annotations or {},
                "creationTimestamp": stamp(HOUR_AGO),
            },
            "spec": claim_spec,
            "status": status,
        }
    )
    return node, claim


def bound(name: str, node: str, cpu: str = "1", memory: str = "1Gi", **kwargs: Any) -> Obj:
    """A running pod bound to `node`, started an hour before NOW (annotations= and owner= optional)."""
    annotations = kwargs.pop("annotations", None)
    owner = kwargs.pop("owner", None)
    started = kwargs.pop("started", HOUR_AGO)
    obj = pod(name, cpu=cpu, memory=memory, node_name=node, **kwargs)
    if annotations:
        obj["metadata"]["annotations"] = annotations
    if owner:
        obj["metadata"]["ownerReferences"] = [{"kind": owner, "name": "owner", "apiVersion": "apps/v1", "uid": "u"}]
    obj["status"] = {"phase": "Running", "startTime": stamp(started)}
    return obj


def pdb(name: str, match_labels: dict[str, str], allowed: int, namespace: str = "default") -> Obj:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": match_labels}},
        "status": {"disruptionsAllowed": allowed},
    }


def run(
    machines: list[tuple[Obj, NodeClaim]],
    pods: list[Obj],
    pools: list[NodePool] | None = None,
    types: list[InstanceType] | None = None,
    **kwargs: Any,
) -> Decision:
    """Decide over these nodes (with their claims) and bound pods; the other keyword arguments are
    DisruptionInput's."""
    cluster = SchedulingInput(
        bound_pods=pods,
        nodes=[n for n, _ in machines],
        node_claims=[c for _, c in machines],
        node_pools=pools if pools is not None else [on_demand_pool()],
        node_classes=[node_class()],
        instance_types=types or catalog(),
        daemonsets=kwargs.pop("daemonsets", []),
    )
    limits = kwargs.pop("limits", Limits())
    clock = kwargs.pop("clock", None)
    inp = DisruptionInput(cluster=cluster, now=kwargs.pop("now", NOW), limits=limits, **kwargs)
    return decide(inp, clock) if clock else decide(inp)


def codes(decision: Decision, node: str) -> list[str]:
    return [r.code for r in decision.why(node)]
