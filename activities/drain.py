"""Which pods a drain evicts, and in what order (Karpenter's termination order). Pure."""

from __future__ import annotations

from typing import Any

from apis import labels

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def is_daemonset_pod(pod: dict[str, Any]) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in pod.get("metadata", {}).get("ownerReferences") or [])


def is_static_pod(pod: dict[str, Any]) -> bool:
    meta = pod.get("metadata", {})
    owners = meta.get("ownerReferences") or []
    return MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}) or any(o.get("kind") == "Node" for o in owners)


def is_terminal(pod: dict[str, Any]) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def is_critical(pod: dict[str, Any]) -> bool:
    return pod.get("spec", {}).get("priorityClassName") in CRITICAL_PRIORITY_CLASSES


def blocks_voluntary_disruption(pod: dict[str, Any]) -> bool:
    """`karpenter.sh/do-not-disrupt: "true"` on the pod."""
    return (pod.get("metadata", {}).get("annotations") or {}).get(labels.DO_NOT_DISRUPT_ANNOTATION) == "true"


def drainable(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods the drain must see gone: not DaemonSet pods, not static pods, not finished."""
    return [p for p in pods if not (is_daemonset_pod(p) or is_static_pod(p) or is_terminal(p))]


def eviction_order(pods: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Waves to evict: non-critical pods first, then system-critical ones once the first wave is gone.
    Pods already terminating are waited for, not evicted again. Each wave is sorted by namespace/name."""
    live = [p for p in drainable(pods) if not p.get("metadata", {}).get("deletionTimestamp")]

    def key(pod: dict[str, Any]) -> tuple[str, str]:
        return (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])

    waves = [
        sorted((p for p in live if not is_critical(p)), key=key),
        sorted((p for p in live if is_critical(p)), key=key),
    ]
    return [wave for wave in waves if wave]
