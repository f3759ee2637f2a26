"""scheduling.drain: which pods a drain step evicts, deletes or holds (Karpenter v1 termination order and
terminationGracePeriod enforcement)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduling.drain import (
    clamped_grace_seconds,
    delete_time,
    drainable,
    eviction_order,
    grace_seconds,
    plan_step,
    pod_key,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def pod(name: str, **traits: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "annotations": {}, "ownerReferences": []}
    spec: dict[str, Any] = {}
    status: dict[str, Any] = {"phase": "Running"}
    if traits.get("daemonset"):
        meta["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds"}]
    if traits.get("static"):
        meta["annotations"]["kubernetes.io/config.mirror"] = "x"
    if traits.get("critical"):
        spec["priorityClassName"] = "system-node-critical"
    if traits.get("do_not_disrupt"):
        meta["annotations"]["karpenter.sh/do-not-disrupt"] = "true"
    if traits.get("done"):
        status["phase"] = "Succeeded"
    if traits.get("terminating"):
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if traits.get("tolerates"):
        spec["tolerations"] = [{"key": "karpenter.sh/disrupted", "operator": "Exists", "effect": "NoSchedule"}]
    if traits.get("tolerates_all"):
        spec["tolerations"] = [{"operator": "Exists"}]
    if "grace" in traits:
        spec["terminationGracePeriodSeconds"] = traits["grace"]
    return {"metadata": meta, "spec": spec, "status": status}


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [pod_key(p) for p in pods]


@pytest.mark.parametrize(
    ("pods", "force", "evict", "delete", "held", "remaining"),
    [
        # non-critical pods first, sorted; the critical one waits for the next wave
        ([pod("b"), pod("a"), pod("c", critical=True)], False, ["a", "b"], [], [], 3),
        # once only critical pods are left they go
        ([pod("c", critical=True)], False, ["c"], [], [], 1),
        # static and finished pods are never drained; a DaemonSet pod is, in a wave after the other pods
        ([pod("d", daemonset=True), pod("s", static=True), pod("f", done=True)], False, ["d"], [], [], 1),
        ([pod("d", daemonset=True), pod("a"), pod("c", critical=True)], False, ["a"], [], [], 3),
        # a DaemonSet whose pods tolerate every taint would only put its pod back: left alone
        ([pod("d", daemonset=True, tolerates_all=True)], False, [], [], [], 0),
        # pods tolerating the disrupted taint would come right back: left alone
        ([pod("t", tolerates=True), pod("u", tolerates_all=True)], False, [], [], [], 0),
        # do-not-disrupt pods are held until the grace period forces deletion
        ([pod("a"), pod("n", do_not_disrupt=True)], False, ["a"], [], ["n"], 2),
        ([pod("n", do_not_disrupt=True), pod("c", critical=True)], False, [], [], ["n"], 2),
        ([pod("a"), pod("n", do_not_disrupt=True)], True, [], ["a", "n"], [], 2),
        # terminating pods are waited for, not evicted again
        ([pod("a", terminating=True), pod("b")], False, ["b"], [], [], 2),
        ([], False, [], [], [], 0),
    ],
)
def test_plan_step(
    pods: list[dict[str, Any]],
    force: bool,
    evict: list[str],
    delete: list[str],
    held: list[str],
    remaining: int,
) -> None:
    plan = plan_step(pods, force)
    assert names(plan.evict) == [f"default/{n}" for n in evict]
    assert names(plan.delete) == [f"default/{n}" for n in delete]
    assert names(plan.held) == [f"default/{n}" for n in held]
    assert plan.remaining == remaining


def test_waves_do_not_depend_on_input_order() -> None:
    pods = [pod("z"), pod("c", critical=True), pod("a"), pod("b", critical=True)]
    pods += [pod("dc", critical=True, daemonset=True), pod("d", daemonset=True)]
    forward = [names(w) for w in eviction_order(pods)]
    backward = [names(w) for w in eviction_order(list(reversed(pods)))]
    expected = [["default/a", "default/z"], ["default/d"], ["default/b", "default/c"], ["default/dc"]]
    assert forward == backward == expected


def test_drainable_skips_only_what_karpenter_skips() -> None:
    pods = [pod("a"), pod("c", critical=True), pod("n", do_not_disrupt=True), pod("d", daemonset=True)]
    pods += [pod("s", static=True), pod("f", done=True), pod("t", tolerates=True)]
    assert names(drainable(pods)) == ["default/a", "default/c", "default/n", "default/d"]


def test_a_do_not_disrupt_duration_holds_the_pod_until_it_is_over() -> None:
    def started(name: str, value: str, at: str) -> dict[str, Any]:
        held = pod(name)
        held["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = value
        held["status"]["startTime"] = at
        return held

    young = started("young", "30m", "2026-01-01T11:45:00Z")  # 15 minutes into its 30
    old = started("old", "30m", "2026-01-01T11:00:00Z")  # an hour
    invalid = started("invalid", "soon", "2026-01-01T11:45:00Z")  # not a duration: ignored
    plan = plan_step([young, old, invalid], False, deadline=None, now=NOW)
    assert names(plan.held) == ["default/young"]
    assert names(plan.evict) == ["default/invalid", "default/old"]


def test_a_pod_stuck_terminating_is_no_longer_waited_for() -> None:
    deleting = pod("deleting")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:30Z"  # its grace period ended 30 s ago
    stuck = pod("stuck")
    stuck["metadata"]["deletionTimestamp"] = "2026-01-01T11:58:59Z"  # a minute and a second ago
    assert names(drainable([deleting, stuck], NOW)) == ["default/deleting"]
    assert names(drainable([deleting, stuck])) == ["default/deleting", "default/stuck"]  # no clock: waited for
    plan = plan_step([stuck], False, deadline=None, now=NOW)
    assert plan.remaining == 0 and not plan.evict and not plan.delete


def in_seconds(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("pods", "force", "deadline", "evict", "delete", "held"),
    [
        # 60 s of grace and 50 s to the deadline: deleted now; 30 s of grace: evicted like any other pod
        ([pod("slow", grace=60), pod("quick", grace=30)], False, in_seconds(50), ["quick"], ["slow"], []),
        # no terminationGracePeriodSeconds means Kubernetes' 30 s; its delete time is inclusive
        ([pod("a")], False, in_seconds(30), [], ["a"], []),
        ([pod("a")], False, in_seconds(31), ["a"], [], []),
        # do-not-disrupt is held until its delete time, then deleted anyway
        ([pod("n", do_not_disrupt=True, grace=10)], False, in_seconds(11), [], [], ["n"]),
        ([pod("n", do_not_disrupt=True, grace=10)], False, in_seconds(10), [], ["n"], []),
        # a critical pod whose time has come is deleted while the first wave is still being evicted
        ([pod("a"), pod("c", critical=True, grace=120)], False, in_seconds(60), ["a"], ["c"], []),
        # pods already terminating are not deleted again, however late
        ([pod("t", terminating=True, grace=600), pod("b")], False, in_seconds(60), ["b"], [], []),
        # static pods are not the drain's, deadline or not; a DaemonSet pod's deadline comes like any other's
        ([pod("d", daemonset=True, grace=600), pod("s", static=True, grace=600)], False, in_seconds(1), [], ["d"], []),
        # the deadline passed: everything left goes, every wave, in wave order
        (
            [pod("c", critical=True), pod("n", do_not_disrupt=True), pod("a")],
            True,
            in_seconds(0),
            [],
            ["a", "n", "c"],
            [],
        ),
        # no deadline (no terminationGracePeriod): only the old rules
        ([pod("slow", grace=6000), pod("n", do_not_disrupt=True, grace=6000)], False, None, ["slow"], [], ["n"]),
    ],
)
def test_plan_step_with_a_deadline(
    pods: list[dict[str, Any]],
    force: bool,
    deadline: datetime | None,
    evict: list[str],
    delete: list[str],
    held: list[str],
) -> None:
    plan = plan_step(pods, force, deadline=deadline, now=NOW)
    assert names(plan.evict) == [f"default/{n}" for n in evict]
    assert names(plan.delete) == [f"default/{n}" for n in delete]
    assert names(plan.held) == [f"default/{n}" for n in held]


def test_a_deadline_needs_now() -> None:
    with pytest.raises(ValueError, match="needs now"):
        plan_step([pod("a")], False, deadline=NOW)


@pytest.mark.parametrize(("traits", "seconds"), [({}, 30), ({"grace": 0}, 0), ({"grace": 90}, 90), ({"grace": -5}, 0)])
def test_grace_seconds_default_to_kubernetes_30(traits: dict[str, Any], seconds: int) -> None:
    assert grace_seconds(pod("a", **traits)) == seconds
    assert delete_time(pod("a", **traits), NOW) == NOW - timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("grace", "left", "clamped"),
    [
        (30, 60, None),  # its own grace period ends before the deadline
        (30, 30, None),  # deleted right on time
        (600, 120, 120),  # deleted late: cut to what is left
        (30, 0, 1),  # the deadline is now: as short as a graceful delete gets
        (30, -90, 1),  # the deadline passed
        (0, -5, None),  # nothing to cut
    ],
)
def test_a_late_delete_cuts_the_grace_period_to_the_deadline(grace: int, left: int, clamped: int | None) -> None:
    assert clamped_grace_seconds(pod("a", grace=grace), NOW + timedelta(seconds=left), NOW) == clamped


def test_no_deadline_keeps_the_pods_own_grace_period() -> None:
    assert clamped_grace_seconds(pod("a", grace=600), None, NOW) is None
