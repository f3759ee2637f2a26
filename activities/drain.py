"""Which pods a drain evicts, and in what order (Karpenter v1's termination, FEATURES.md TM-02..TM-04). Pure.

A drain step sees the pods on the node and decides (`plan_step`): evict the current wave (non-critical
pods first, system-critical ones once those are gone; DaemonSet, static and finished pods never), hold back
`karpenter.sh/do-not-disrupt` pods, and once terminationGracePeriod has passed (`force`) delete whatever is
left of the wave instead, do-not-disrupt included. A PDB refusal (429) is the caller's normal outcome:
the pod stays and the next step tries again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


def tolerates_disrupted_taint(pod: dict[str, Any]) -> bool:
    """The pod tolerates `karpenter.sh/disrupted:NoSchedule`, so the drain would only see it come back."""
    for tol in pod.get("spec", {}).get("tolerations") or []:
        key, operator, effect = tol.get("key"), tol.get("operator", "Equal"), tol.get("effect")
        if effect not in (None, "", "NoSchedule"):
            continue
        if (key in (None, "") and operator == "Exists") or key == labels.DISRUPTED_TAINT_KEY:
            return True
    return False


def drainable(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods the drain must see gone: not DaemonSet pods, not static pods, not finished, not tolerating
    the disrupted taint."""
    return [
        p
        for p in pods
        if not (is_daemonset_pod(p) or is_static_pod(p) or is_terminal(p) or tolerates_disrupted_taint(p))
    ]


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


def pod_key(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata", {})
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


@dataclass(frozen=True)
class StepPlan:
    """What one drain step does: evict (respecting PDBs) or delete (grace period over) these pods; `held`
    are do-not-disrupt pods left alone; `remaining` counts drainable pods still on the node."""

    evict: list[dict[str, Any]] = field(default_factory=list)
    delete: list[dict[str, Any]] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)
    remaining: int = 0


def plan_step(pods: list[dict[str, Any]], force: bool) -> StepPlan:
    """The next drain step for the pods on a node (see the module docstring)."""
    remaining = len(drainable(pods))
    waves = eviction_order(pods)
    wave = waves[0] if waves else []
    if force:
        return StepPlan(delete=wave, remaining=remaining)
    held = [p for p in wave if blocks_voluntary_disruption(p)]
    evict = [p for p in wave if not blocks_voluntary_disruption(p)]
    return StepPlan(evict=evict, held=held, remaining=remaining)
