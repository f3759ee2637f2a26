"""Which pending pods nodeflow should try to provision capacity for (Karpenter's IsProvisionable)."""

from __future__ import annotations

from typing import Any

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def pod_key(pod: dict[str, Any]) -> str:
    """`namespace/name` (namespace `default` when unset)."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def is_bound(pod: dict[str, Any]) -> bool:
    """On a node (spec.nodeName set) and not terminal (Succeeded, Failed): it uses the node's capacity."""
    return (
        bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES
    )


def is_unschedulable(pod: dict[str, Any]) -> bool:
    """The kube-scheduler marked it: condition PodScheduled=False with reason Unschedulable."""
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return bool(cond.get("status") == "False" and cond.get("reason") == "Unschedulable")
    return False


def is_owned_by_daemonset(pod: dict[str, Any]) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in pod.get("metadata", {}).get("ownerReferences") or [])


def is_provisionable(pod: dict[str, Any]) -> bool:
    """Pending, not bound, not terminating, marked unschedulable, not a DaemonSet pod (those follow
    nodes rather than cause them), and not preempting: a pod the kube-scheduler has nominated a node for
    (`status.nominatedNodeName`) will run there once the pods it evicts are gone, so it needs no new node,
    as Karpenter's IsProvisionable says."""
    if pod.get("spec", {}).get("nodeName") or pod.get("status", {}).get("nominatedNodeName"):
        return False
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    if pod.get("status", {}).get("phase") in TERMINAL_PHASES:
        return False
    return is_unschedulable(pod) and not is_owned_by_daemonset(pod)
