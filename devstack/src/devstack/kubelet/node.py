"""The Node object a kubelet registers for an EC2 instance: pure functions, no I/O.

Labels are the kubelet's own (hostname, os -- windows on a Windows instance --, arch, instance type, zone,
region, capacity type) on top of the NodeClaim's labels and single-value `In` requirements, which
Karpenter's user data passes to the kubelet as --node-labels. Taints are the claim's taints and startup taints plus
`karpenter.sh/unregistered:NoExecute`, which nodeflow removes when it registers the node.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from apis import labels as wk
from cloudprovider.types import instance_id_of as instance_id_in
from devstack.kubelet.capacity import allocatable_units, architecture, as_quantities, capacity_units

Obj = dict[str, Any]

# Marks Nodes this simulated kubelet registered (value: the cluster name), so it only ever deletes its own.
SIMULATED_ANNOTATION = "devstack.nodeflow.io/simulated-kubelet"
UNREGISTERED_TAINT: Obj = {"key": wk.UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}
KUBELET_VERSION = "v1.32.0"


def node_name(instance: Mapping[str, Any]) -> str:
    """The instance's private DNS name (what an EKS kubelet registers as), else its instance id."""
    return str(instance.get("PrivateDnsName") or instance["InstanceId"])


def zone_of(instance: Mapping[str, Any]) -> str:
    return str((instance.get("Placement") or {}).get("AvailabilityZone") or "")


def provider_id(instance: Mapping[str, Any]) -> str:
    """`aws:///<zone>/<instance-id>`, the format nodeflow matches NodeClaims by."""
    return f"aws:///{zone_of(instance)}/{instance['InstanceId']}"


def instance_id_of(node: Mapping[str, Any]) -> str | None:
    """The instance id in a Node's `aws:///zone/i-...` providerID, or None for other providers."""
    pid = str((node.get("spec") or {}).get("providerID") or "")
    if not pid.startswith("aws:///"):
        return None
    return instance_id_in(pid) or None


def tag(instance: Mapping[str, Any], key: str) -> str | None:
    for item in instance.get("Tags") or []:
        if item.get("Key") == key:
            return str(item.get("Value", ""))
    return None


def capacity_type(instance: Mapping[str, Any]) -> str:
    return wk.CAPACITY_TYPE_SPOT if instance.get("InstanceLifecycle") == "spot" else wk.CAPACITY_TYPE_ON_DEMAND


def claim_labels(claim: Mapping[str, Any] | None) -> dict[str, str]:
    """The claim's metadata.labels plus each requirement `In` exactly one value."""
    if not claim:
        return {}
    out = {str(k): str(v) for k, v in ((claim.get("metadata") or {}).get("labels") or {}).items()}
    for req in (claim.get("spec") or {}).get("requirements") or []:
        values = req.get("values") or []
        if req.get("operator") == "In" and len(values) == 1:
            out[str(req["key"])] = str(values[0])
    return out


def claim_taints(claim: Mapping[str, Any] | None, field: str) -> list[Obj]:
    """`spec.taints` or `spec.startupTaints` of the claim, as {key, value?, effect} dicts."""
    if not claim:
        return []
    return [_taint(t) for t in (claim.get("spec") or {}).get(field) or []]


def _taint(raw: Mapping[str, Any]) -> Obj:
    taint: Obj = {"key": raw["key"], "effect": raw["effect"]}
    if raw.get("value"):
        taint["value"] = raw["value"]
    return taint


def dedupe_taints(taints: Iterable[Mapping[str, Any]]) -> list[Obj]:
    """Taints with one entry per (key, effect), first one wins, order kept."""
    seen: set[tuple[str, str]] = set()
    out: list[Obj] = []
    for taint in taints:
        identity = (str(taint["key"]), str(taint["effect"]))
        if identity not in seen:
            seen.add(identity)
            out.append(dict(taint))
    return out


def operating_system(instance: Mapping[str, Any]) -> str:
    """`windows` for an instance EC2 reports with `Platform: windows` (launched from a Windows AMI), else
    `linux`: the kubernetes.io/os a kubelet on it registers."""
    return "windows" if str(instance.get("Platform") or "").lower() == "windows" else "linux"


def kubelet_labels(instance: Mapping[str, Any], type_info: Mapping[str, Any], region: str) -> dict[str, str]:
    return {
        wk.HOSTNAME: node_name(instance),
        wk.OS: operating_system(instance),
        wk.ARCH: architecture(type_info),
        wk.INSTANCE_TYPE: str(instance["InstanceType"]),
        wk.ZONE: zone_of(instance),
        wk.REGION: region,
        wk.CAPACITY_TYPE: capacity_type(instance),
    }


def build_node(
    instance: Mapping[str, Any],
    type_info: Mapping[str, Any],
    claim: Mapping[str, Any] | None,
    region: str,
    cluster_name: str,
) -> Obj:
    """The Node to create for a running instance (metadata and spec; the status is written after)."""
    labels = {**claim_labels(claim), **kubelet_labels(instance, type_info, region)}
    taints = dedupe_taints([*claim_taints(claim, "taints"), *claim_taints(claim, "startupTaints"), UNREGISTERED_TAINT])
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node_name(instance),
            "labels": dict(sorted(labels.items())),
            "annotations": {SIMULATED_ANNOTATION: cluster_name},
        },
        "spec": {"providerID": provider_id(instance), "taints": taints},
    }


def _condition(kind: str, status: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def conditions(ready: bool, now: str) -> list[Obj]:
    """The kubelet's node conditions: no pressure, and Ready as given."""
    ready_condition = (
        _condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", now)
        if ready
        else _condition("Ready", "False", "KubeletNotReady", "container runtime network not ready", now)
    )
    return [
        _condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory", now),
        _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", now),
        _condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available", now),
        ready_condition,
    ]


def _stable_uuid(instance_id: str, purpose: str) -> str:
    return str(uuid.UUID(hashlib.sha256(f"{purpose}/{instance_id}".encode()).hexdigest()[:32]))


def node_status(instance: Mapping[str, Any], type_info: Mapping[str, Any], ready: bool, now: str) -> Obj:
    """The Node status a kubelet posts: capacity, allocatable, addresses, nodeInfo and conditions."""
    capacity = capacity_units(type_info)
    instance_id = str(instance["InstanceId"])
    addresses = [{"type": "InternalIP", "address": str(instance.get("PrivateIpAddress") or "")}]
    if instance.get("PrivateDnsName"):
        addresses.append({"type": "InternalDNS", "address": str(instance["PrivateDnsName"])})
    addresses.append({"type": "Hostname", "address": node_name(instance)})
    return {
        "capacity": as_quantities(capacity),
        "allocatable": as_quantities(allocatable_units(capacity)),
        "addresses": addresses,
        "conditions": conditions(ready, now),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": _stable_uuid(instance_id, "machine").replace("-", ""),
            "systemUUID": _stable_uuid(instance_id, "system"),
            "bootID": _stable_uuid(instance_id, "boot"),
            "kernelVersion": "6.1.0-amazon",
            "osImage": "Amazon Linux 2023",
            "containerRuntimeVersion": "containerd://1.7.27",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": architecture(type_info),
        },
    }


def is_ready(node: Mapping[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False
