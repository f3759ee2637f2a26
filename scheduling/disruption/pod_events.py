"""When a node's pods last changed, from a pod watch: the input of NodeClaim `status.lastPodEventTime`. Pure.

Karpenter's `consolidateAfter` counts from the last pod added to or removed from a node. Its pod-events
controller stamps the node's NodeClaim when a pod is bound to the node, goes terminal (Succeeded, Failed)
or starts terminating; DaemonSet pods do not count (they follow nodes). `PodEventTracker` turns the events
of a pod watch into those stamps: `observe` returns `(node name, event time)` when a pod's event counts.

- A pod seen bound for the first time (just bound, or first seen by this process) counts at its
  `PodScheduled` condition's lastTransitionTime (else its start time, else its creation time): the moment
  it was bound, not the moment it was seen. So a worker restarting, or a watch relisting, re-derives the
  same time instead of resetting every node's clock; the writer never moves a stamp backwards.
- A pod that turns terminal or terminating, or is deleted while bound and still running, counts now.
- A pod first seen already terminal or terminating does not count: when it stopped is unknown, and it
  stopped before this process watched (a restart must not reset the clocks of nodes with finished jobs).

The watch must report every deletion: one that lists again (after a failure) reports each pod deleted
meanwhile as DELETED, with at least the pod's namespace and name (kube.reflector does).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scheduling.disruption.candidates import parse_time
from scheduling.disruption.model import Obj
from scheduling.provisioning.provisionable import TERMINAL_PHASES, is_owned_by_daemonset, pod_key

PodEvent = tuple[str, datetime]  # (node name, when)


@dataclass
class _Seen:
    node: str
    stopped: bool  # terminal or terminating


def bound_at(pod: Obj) -> datetime | None:
    """When the pod was bound: its PodScheduled=True condition's lastTransitionTime, else its start time,
    else its creation time; None when none is known."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "True":
            when = parse_time(condition.get("lastTransitionTime"))
            if when is not None:
                return when
    return parse_time(status.get("startTime")) or parse_time((pod.get("metadata") or {}).get("creationTimestamp"))


def is_stopped(pod: Obj) -> bool:
    """Terminal (Succeeded, Failed) or terminating (deletionTimestamp set)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in TERMINAL_PHASES or bool((pod.get("metadata") or {}).get("deletionTimestamp"))


class PodEventTracker:
    """The last state seen of each bound pod (its node and whether it stopped), across watch restarts.
    Memory: one small entry per bound pod. Not thread-safe: one watch thread drives it."""

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}

    def __len__(self) -> int:
        return len(self._seen)

    def observe(self, event_type: str, pod: Obj, now: datetime) -> PodEvent | None:
        """The node whose pods changed and when, for one watch event (ADDED, MODIFIED, DELETED); None when
        the event changes no node's pods (an unbound pod, a DaemonSet pod, a status update)."""
        if is_owned_by_daemonset(pod):
            return None
        key = pod_key(pod)
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        previous = self._seen.pop(key, None)
        if event_type == "DELETED":
            if previous is not None and not previous.stopped:
                return previous.node, now
            if previous is None and node and not is_stopped(pod):
                return node, now
            return None
        if not node:
            return None
        stopped = is_stopped(pod)
        self._seen[key] = _Seen(node, stopped)
        if previous is None or previous.node != node:
            when = None if stopped else bound_at(pod)
            return (node, when) if when is not None else None
        if stopped and not previous.stopped:
            return node, now
        return None
