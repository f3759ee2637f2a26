"""Which pods a drain evicts, and in what order (as Karpenter v1's termination controller drains a node:
waves by priority, PodDisruptionBudgets through the Eviction API, terminationGracePeriod). Pure.

A drain step sees the pods on the node and decides (`plan_step`): evict the current wave (Karpenter's four,
each once the one before is gone: non-critical pods, then non-critical DaemonSet pods, then
system-critical pods, then system-critical DaemonSet pods, so that a node's agents, a log shipper say,
outlive the workloads they serve and still stop gracefully; static and finished pods never), hold back
`karpenter.sh/do-not-disrupt` pods ("true", or a duration since the pod started not yet over), and once
terminationGracePeriod has passed (`force`) delete whatever is left of the wave instead, do-not-disrupt
included. A PDB refusal (429) is the caller's normal outcome:
the pod stays and the next step tries again.

With the node's termination deadline (drain start + the NodePool's terminationGracePeriod) each pod is
deleted at `deadline - its spec.terminationGracePeriodSeconds` (30 s when unset), whatever its wave, PDBs
or do-not-disrupt say, so it still gets its whole grace period before the node goes (`delete_time`,
`expiring`). A pod deleted late (a drain step runs every few seconds, or the deadline has passed) gets its
grace period cut to what is left until the deadline (`clamped_grace_seconds`), as Karpenter does. Pods
already terminating (deletionTimestamp set) are only waited for, and, as Karpenter's drain, no longer
once they are stuck (`is_stuck_terminating`): a pod still there a minute after its deletionTimestamp (the
moment its grace period ended) is on a kubelet that is not stopping it, such as a node that stopped
answering, and waiting for it would hold the node forever when its NodePool sets no
terminationGracePeriod.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from apis import labels
from apis.meta import parse_rfc3339, rfc3339
from scheduling.disruption.candidates import do_not_disrupt_until
from scheduling.provisioning.provisionable import pod_key

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_TERMINATION_GRACE_SECONDS = 30  # Kubernetes' default spec.terminationGracePeriodSeconds
STUCK_TERMINATING_AFTER = timedelta(minutes=1)  # past a pod's deletionTimestamp, as Karpenter's drain


def is_daemonset_pod(pod: dict[str, Any]) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in pod.get("metadata", {}).get("ownerReferences") or [])


def is_static_pod(pod: dict[str, Any]) -> bool:
    meta = pod.get("metadata", {})
    owners = meta.get("ownerReferences") or []
    return MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}) or any(o.get("kind") == "Node" for o in owners)


def is_terminal(pod: dict[str, Any]) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def is_terminating(pod: dict[str, Any]) -> bool:
    return bool(pod.get("metadata", {}).get("deletionTimestamp"))


def is_stuck_terminating(pod: dict[str, Any], now: datetime) -> bool:
    """The pod is still there more than STUCK_TERMINATING_AFTER past its deletionTimestamp. `now` must be
    timezone-aware."""
    deleted = parse_rfc3339(pod.get("metadata", {}).get("deletionTimestamp"))
    return deleted is not None and now - deleted > STUCK_TERMINATING_AFTER


def is_critical(pod: dict[str, Any]) -> bool:
    return pod.get("spec", {}).get("priorityClassName") in CRITICAL_PRIORITY_CLASSES


def blocks_voluntary_disruption(pod: dict[str, Any], now: datetime | None = None) -> bool:
    """The pod's `karpenter.sh/do-not-disrupt` is in force: "true", or a duration ("30m") not yet over since
    the pod started (scheduling.disruption.candidates.do_not_disrupt_until, as Karpenter reads it), at
    `now` (timezone-aware; without it a duration counts as in force)."""
    forever, until = do_not_disrupt_until(pod)
    return forever or (until is not None and (now is None or now < until))


def tolerates_disrupted_taint(pod: dict[str, Any]) -> bool:
    """The pod tolerates `karpenter.sh/disrupted:NoSchedule`, so the drain would only see it come back."""
    for tol in pod.get("spec", {}).get("tolerations") or []:
        key, operator, effect = tol.get("key"), tol.get("operator", "Equal"), tol.get("effect")
        if effect not in (None, "", "NoSchedule"):
            continue
        if (key in (None, "") and operator == "Exists") or key == labels.DISRUPTED_TAINT_KEY:
            return True
    return False


def drainable(pods: list[dict[str, Any]], now: datetime | None = None) -> list[dict[str, Any]]:
    """Pods the drain must see gone: not static pods, not finished, not tolerating the disrupted taint
    (a DaemonSet that tolerates every taint would only put its pod back), and, given `now`
    (timezone-aware), not stuck terminating."""
    return [
        p
        for p in pods
        if not (is_static_pod(p) or is_terminal(p) or tolerates_disrupted_taint(p))
        and not (now is not None and is_stuck_terminating(p, now))
    ]


def eviction_order(pods: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Waves to evict, each once the one before is gone (see the module docstring): non-critical pods,
    non-critical DaemonSet pods, system-critical pods, system-critical DaemonSet pods. Pods already
    terminating are waited for, not evicted again. Each wave is sorted by namespace/name."""
    live = [p for p in drainable(pods) if not is_terminating(p)]

    def key(pod: dict[str, Any]) -> tuple[str, str]:
        return (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])

    def wave(critical: bool, daemon: bool) -> list[dict[str, Any]]:
        return sorted((p for p in live if is_critical(p) == critical and is_daemonset_pod(p) == daemon), key=key)

    waves = [wave(False, False), wave(False, True), wave(True, False), wave(True, True)]
    return [w for w in waves if w]


def grace_seconds(pod: dict[str, Any]) -> int:
    """The pod's spec.terminationGracePeriodSeconds: 30 when unset, never negative."""
    value = pod.get("spec", {}).get("terminationGracePeriodSeconds")
    return DEFAULT_TERMINATION_GRACE_SECONDS if value is None else max(0, int(value))


def delete_time(pod: dict[str, Any], deadline: datetime) -> datetime:
    """When the pod must be deleted for its grace period to end by the node's `deadline`."""
    return deadline - timedelta(seconds=grace_seconds(pod))


def clamped_grace_seconds(pod: dict[str, Any], deadline: datetime | None, now: datetime) -> int | None:
    """The grace period to delete the pod with so that it ends by `deadline`, or None when its own
    terminationGracePeriodSeconds already fits (or there is no deadline). Never below 1 second: a
    grace period of 0 would remove the pod from the API before the kubelet has stopped it."""
    if deadline is None:
        return None
    clamped = max(1, int((deadline - now).total_seconds()))
    return clamped if clamped < grace_seconds(pod) else None


def expiring(pods: list[dict[str, Any]], deadline: datetime, now: datetime) -> list[dict[str, Any]]:
    """Drainable, not yet terminating pods whose delete time (`delete_time`) is `now` or earlier, in wave
    order. `deadline` and `now` must both be timezone-aware (or both naive)."""
    return [p for wave in eviction_order(pods) for p in wave if delete_time(p, deadline) <= now]


@dataclass(frozen=True)
class StepPlan:
    """What one drain step does: evict (respecting PDBs) or delete (grace period over, PDBs and
    do-not-disrupt bypassed) these pods; `held` are do-not-disrupt pods left alone; `remaining` counts
    drainable pods still on the node."""

    evict: list[dict[str, Any]] = field(default_factory=list)
    delete: list[dict[str, Any]] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)
    remaining: int = 0


def plan_step(
    pods: list[dict[str, Any]], force: bool, *, deadline: datetime | None = None, now: datetime | None = None
) -> StepPlan:
    """The next drain step for the pods on a node (see the module docstring).

    `delete` holds the current wave when `force`, plus every pod of any wave whose delete time has come
    when `deadline` is given (which then requires `now`); each pod appears once, in wave order. The rest of
    the current wave is evicted, or held when do-not-disrupt. Raises ValueError for a deadline without now.
    """
    due: set[str] = set()
    if deadline is not None:
        if now is None:
            raise ValueError("plan_step: a deadline needs now")
        due = {pod_key(p) for p in expiring(pods, deadline, now)}
    remaining = len(drainable(pods, now))
    waves = eviction_order(pods)
    wave = waves[0] if waves else []
    if force:
        due |= {pod_key(p) for p in wave}
    delete = [p for w in waves for p in w if pod_key(p) in due]
    rest = [p for p in wave if pod_key(p) not in due]
    held = [p for p in rest if blocks_voluntary_disruption(p, now)]
    evict = [p for p in rest if not blocks_voluntary_disruption(p, now)]
    return StepPlan(evict=evict, delete=delete, held=held, remaining=remaining)


def disrupted_message(pod: Any, deadline: datetime | None, clamped_grace: int | None = None) -> str:
    """The message of the `Disrupted` event on a pod deleted for terminationGracePeriod (Karpenter records
    the same event when it deletes a pod past its node's termination deadline); `clamped_grace` is the
    shortened grace period it was deleted with, if any."""
    own = grace_seconds(pod)
    cut = f", cut to {clamped_grace}s" if clamped_grace is not None else ""
    grace = f"terminationGracePeriodSeconds {own}s{cut}"
    by = f"by the node's termination time {rfc3339(deadline)}" if deadline else "now the node's grace period is over"
    return f"deleting the pod ({grace}) to end {by}, bypassing PodDisruptionBudgets and karpenter.sh/do-not-disrupt"
