"""Builders for scheduling tests: pods, nodes, NodePools and catalogs in a line each."""

from __future__ import annotations

from typing import Any

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from apis.nodepool import NodePool
from scheduling import Plan, SchedulingInput, solve

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
Obj = dict[str, Any]


def instance_type(
    name: str,
    cpu: int,
    memory_gi: int,
    price: float,
    pods: int = 110,
    zones: tuple[str, ...] = ZONES,
    spot: bool = True,
    labels: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
    unavailable: tuple[str, ...] = (),
) -> InstanceType:
    offerings = []
    for zone in zones:
        offerings.append(
            {"zone": zone, "capacityType": "on-demand", "price": price, "available": zone not in unavailable}
        )
        if spot:
            offerings.append({"zone": zone, "capacityType": "spot", "price": round(price * 0.4, 5)})
    capacity = {"cpu": str(cpu), "memory": f"{memory_gi}Gi", "pods": str(pods), **(extra or {})}
    return InstanceType.model_validate(
        {"name": name, "capacity": capacity, "labels": labels or {}, "offerings": offerings}
    )


def catalog() -> list[InstanceType]:
    """A small AWS-like catalog: c (2 GiB/cpu), m (4 GiB/cpu), r (8 GiB/cpu), one GPU type, one arm64."""
    out = []
    for size, cpu in (("large", 2), ("xlarge", 4), ("2xlarge", 8), ("4xlarge", 16)):
        out.append(instance_type(f"c5.{size}", cpu, cpu * 2, 0.0425 * cpu))
        out.append(instance_type(f"m5.{size}", cpu, cpu * 4, 0.048 * cpu))
        out.append(instance_type(f"r5.{size}", cpu, cpu * 8, 0.063 * cpu))
    out.append(instance_type("m6g.large", 2, 8, 0.1, labels={"kubernetes.io/arch": "arm64"}))
    out.append(instance_type("g4dn.xlarge", 4, 16, 0.526, extra={"nvidia.com/gpu": "1"}))
    return out


def node_pool(name: str = "default", **spec: Any) -> NodePool:
    template_spec: Obj = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    for key in ("requirements", "taints", "startupTaints"):
        if key in spec:
            template_spec[key] = spec.pop(key)
    template: Obj = {"spec": template_spec}
    if "labels" in spec:
        template["metadata"] = {"labels": spec.pop("labels")}
    status = spec.pop("status", {})
    return NodePool.model_validate(
        {"metadata": {"name": name}, "spec": {"template": template, **spec}, "status": status}
    )


def node_class(name: str = "default", kubelet: Obj | None = None) -> EC2NodeClass:
    spec: Obj = {
        "role": "KarpenterNodeRole",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
    }
    if kubelet:
        spec["kubelet"] = kubelet
    return EC2NodeClass.model_validate({"metadata": {"name": name}, "spec": spec})


def pod(
    name: str,
    cpu: str = "100m",
    memory: str = "128Mi",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    **spec: Any,
) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    requests.update(spec.pop("requests", {}))
    container: Obj = {"name": "app", "image": "app", "resources": {"requests": requests}}
    if "ports" in spec:
        container["ports"] = spec.pop("ports")
    body: Obj = {"containers": [container], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": body}


def pods(prefix: str, count: int, **kwargs: Any) -> list[Obj]:
    return [pod(f"{prefix}-{i:03d}", **kwargs) for i in range(count)]


def node(
    name: str, cpu: str = "4", memory: str = "16Gi", pods_cap: str = "110", labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
) -> Obj:  # fmt: skip
    alloc = {"cpu": cpu, "memory": memory, "pods": pods_cap}
    meta_labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": ZONES[0], **(labels or {})}
    return {
        "metadata": {"name": name, "labels": meta_labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def schedule(pending: list[Obj], pools: list[NodePool] | None = None, **kwargs: Any) -> Plan:
    inp = SchedulingInput(
        pods=pending,
        node_pools=pools if pools is not None else [node_pool()],
        node_classes=kwargs.pop("node_classes", [node_class()]),
        instance_types=kwargs.pop("instance_types", catalog()),
        **kwargs,
    )
    return solve(inp)


def placement(plan: Plan) -> dict[str, str]:
    """pod -> where it went: "claim-<i>", the node name, or "pending"."""
    out: dict[str, str] = {}
    for index, claim in enumerate(plan.node_claims):
        for p in claim.pods:
            out[p] = f"claim-{index}"
    for existing in plan.existing_nodes:
        for p in existing.pods:
            out[p] = existing.name
    for u in plan.unschedulable:
        out[u.pod] = "pending"
    return out


def reason(plan: Plan, pod_key: str) -> str:
    return next(u.reason for u in plan.unschedulable if u.pod == pod_key)


def requirement(plan_claim: Any, key: str) -> list[str] | None:
    for req in plan_claim.requirements:
        if req.key == key and req.operator == "In":
            return list(req.values)
    return None
