"""Which pending pods nodeflow should try to provision capacity for (Karpenter's IsProvisionable)."""

from __future__ import annotations

from typing import Any

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def pod_key(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata", {})
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def is_unschedulable(pod: dict[str, Any]) -> bool:
    """The kube-scheduler marked it: condition PodScheduled=False with reason Unschedulable."""
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return cond.get("status") == "False" and cond.get("reason") == "Unschedulable"
    return False


def is_owned_by_daemonset(pod: dict[str, Any]) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in pod.get("metadata", {}).get("ownerReferences") or [])


def is_provisionable(pod: dict[str, Any]) -> bool:
    """Pending, not bound, not terminating, marked unschedulable, and not a DaemonSet pod (those follow
    nodes rather than cause them)."""
    if pod.get("spec", {}).get("nodeName"):
        return False
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    if pod.get("status", {}).get("phase") in TERMINAL_PHASES:
        return False
    return is_unschedulable(pod) and not is_owned_by_daemonset(pod)
