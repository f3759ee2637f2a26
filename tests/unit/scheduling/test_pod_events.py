"""scheduling.disruption.pod_events: which pod watch events change a node's pods, and when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scheduling.disruption.pod_events import PodEventTracker, bound_at

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
BOUND = datetime(2026, 1, 5, 11, 0, tzinfo=UTC)


def pod(name: str = "web", node: str = "node-1", phase: str = "Running", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-01-05T10:00:00Z"},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-05T11:00:00Z"}]
            if node
            else [],
        },
    }
    for key, value in extra.items():
        out[key] = {**out.get(key, {}), **value}
    return out


def test_a_pod_binding_counts_when_it_was_bound_not_when_it_was_seen() -> None:
    tracker = PodEventTracker()
    assert tracker.observe("ADDED", pod(node=""), NOW) is None  # pending
    assert tracker.observe("MODIFIED", pod(), NOW) == ("node-1", BOUND)
    assert tracker.observe("MODIFIED", pod(), NOW + timedelta(seconds=5)) is None  # a status update


def test_the_bind_time_falls_back_to_the_start_then_the_creation_time() -> None:
    bare = pod()
    bare["status"]["conditions"] = []
    assert bound_at(bare) == datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    bare["status"]["startTime"] = "2026-01-05T10:30:00Z"
    assert bound_at(bare) == datetime(2026, 1, 5, 10, 30, tzinfo=UTC)


def test_turning_terminal_or_terminating_counts_now_once() -> None:
    tracker = PodEventTracker()
    tracker.observe("ADDED", pod("job"), NOW)
    tracker.observe("ADDED", pod("web"), NOW)
    assert tracker.observe("MODIFIED", pod("job", phase="Succeeded"), NOW) == ("node-1", NOW)
    assert tracker.observe("MODIFIED", pod("job", phase="Succeeded"), NOW) is None
    assert tracker.observe("DELETED", pod("job", phase="Succeeded"), NOW) is None  # already counted
    terminating = pod("web", metadata={"deletionTimestamp": "2026-01-05T12:00:00Z"})
    assert tracker.observe("MODIFIED", terminating, NOW) == ("node-1", NOW)
    assert tracker.observe("DELETED", terminating, NOW) is None
    assert len(tracker) == 0


def test_a_running_pod_deleted_at_once_counts_now() -> None:
    tracker = PodEventTracker()
    tracker.observe("ADDED", pod(), NOW)
    later = NOW + timedelta(minutes=1)
    assert tracker.observe("DELETED", pod(), later) == ("node-1", later)
    assert PodEventTracker().observe("DELETED", pod(), later) == ("node-1", later)  # never seen before


def test_daemonset_pods_and_pods_first_seen_finished_do_not_count() -> None:
    tracker = PodEventTracker()
    daemon = pod(metadata={"ownerReferences": [{"kind": "DaemonSet", "name": "ds"}]})
    assert tracker.observe("ADDED", daemon, NOW) is None
    assert tracker.observe("DELETED", daemon, NOW) is None
    assert tracker.observe("ADDED", pod("done", phase="Failed"), NOW) is None


def test_a_relist_repeats_nothing_and_a_pod_deleted_meanwhile_counts_from_its_name_alone() -> None:
    tracker = PodEventTracker()
    tracker.observe("ADDED", pod("a"), NOW)
    tracker.observe("ADDED", pod("b", node="node-2"), NOW)
    tracker.observe("ADDED", pod("c", node="node-3", phase="Succeeded"), NOW)
    later = NOW + timedelta(seconds=15)
    assert tracker.observe("ADDED", pod("a"), later) is None  # listed again
    # A relist reports what it no longer lists as DELETED with only what it kept (kube.reflector).
    assert tracker.observe("DELETED", {"metadata": {"name": "b", "namespace": "default"}}, later) == ("node-2", later)
    assert tracker.observe("DELETED", {"metadata": {"name": "c", "namespace": "default"}}, later) is None  # had stopped
    assert len(tracker) == 1
