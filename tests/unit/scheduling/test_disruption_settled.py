"""When the look ahead may skip a pass: the state key, how long a decision holds, and the settlement over
passes that evaluate the single-node candidates in turn (scheduling.disruption.settled)."""

from __future__ import annotations

import copy
from datetime import timedelta
from itertools import count
from typing import Any

from scheduling.disruption import DisruptionInput, decide
from scheduling.disruption.model import Limits
from scheduling.disruption.settled import (
    REVALIDATE,
    Settlement,
    StateKey,
    decides_the_same_until,
    settle,
    state_key,
)
from scheduling.types import SchedulingInput
from tests.unit.scheduling.builders import catalog, node_class
from tests.unit.scheduling.disruption_builders import NOW, bound, budget_pool, karpenter_node


def two_full_nodes(**kwargs: Any) -> DisruptionInput:
    """Two m5.large nodes, each nearly full with one pod: single-node consolidation finds nothing cheaper."""
    machines = [karpenter_node("a", "m5.large"), karpenter_node("b", "m5.large")]
    pods = [bound("pa", "a", cpu="1500m", memory="6Gi"), bound("pb", "b", cpu="1500m", memory="6Gi")]
    cluster = SchedulingInput(
        bound_pods=pods,
        nodes=[n for n, _ in machines],
        node_claims=[c for _, c in machines],
        node_pools=kwargs.pop("pools", [budget_pool()]),
        node_classes=[node_class()],
        instance_types=catalog(),
    )
    return DisruptionInput(cluster=cluster, now=kwargs.pop("now", NOW), **kwargs)


def test_the_key_follows_what_a_decision_reads_and_not_the_clock() -> None:
    inp = two_full_nodes()
    assert state_key(inp) == state_key(two_full_nodes(now=NOW + timedelta(minutes=1), single_node_first=["b"]))
    moved = copy.deepcopy(inp)
    moved.cluster.bound_pods[0]["metadata"]["labels"] = {"app": "moved"}  # what a PDB or an affinity selects
    assert state_key(moved) != state_key(inp)
    scarce = copy.deepcopy(inp)
    scarce.cluster.instance_types[0].offerings[0].available = False  # an offering withdrawn: what no watch shows
    assert state_key(scarce) != state_key(inp)
    relabelled = copy.deepcopy(inp)
    relabelled.cluster.node_claims[0].metadata.resource_version = "7"
    assert state_key(relabelled) != state_key(inp)


def test_status_reports_that_no_decision_reads_leave_the_key_as_it_was() -> None:
    inp = two_full_nodes()
    reported = copy.deepcopy(inp)
    node, pod = reported.cluster.nodes[0], reported.cluster.bound_pods[0]
    node["metadata"]["resourceVersion"] = "901"  # a kubelet's status report: a heartbeat, images, addresses
    node.setdefault("status", {})["images"] = [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 1}]
    for condition in node["status"].setdefault("conditions", []):
        condition["lastHeartbeatTime"] = "2030-01-01T00:00:00Z"
    pod["metadata"]["resourceVersion"] = "902"  # a probe result, a container restarting
    pod.setdefault("status", {})["containerStatuses"] = [{"name": "app", "ready": False, "restartCount": 3}]
    assert state_key(reported) == state_key(inp)
    not_ready = copy.deepcopy(inp)
    not_ready.cluster.nodes[0].setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "False"}]
    assert state_key(not_ready) != state_key(inp), "a Node going NotReady changes what budgets count"
    deleting = copy.deepcopy(inp)
    deleting.cluster.bound_pods[0]["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    assert state_key(deleting) != state_key(inp)


def test_a_decision_holds_until_revalidation_or_the_first_time_driven_change() -> None:
    inp = two_full_nodes()
    assert decides_the_same_until(inp, decide(inp)) == NOW + REVALIDATE
    waiting = budget_pool(disruption={"consolidateAfter": "2m"})
    soon = two_full_nodes(pools=[waiting], now=NOW)
    soon.cluster.node_claims[0].status.last_pod_event_time = (NOW - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert decides_the_same_until(soon, decide(soon)) == NOW + timedelta(minutes=1)  # consolidateAfter elapses
    scheduled = budget_pool()
    scheduled.spec.disruption.budgets[0].schedule, scheduled.spec.disruption.budgets[0].duration = "0 3 * * *", "1h"
    at = NOW + timedelta(seconds=30)
    nightly = two_full_nodes(pools=[scheduled], now=at)
    assert decides_the_same_until(nightly, decide(nightly)) == NOW + timedelta(minutes=1)  # cron fires on the minute


def test_a_decision_with_a_command_does_not_hold() -> None:
    inp = two_full_nodes()
    inp.cluster.bound_pods = []  # both nodes empty: emptiness deletes them
    decision = decide(inp)
    assert decision.command is not None
    assert decides_the_same_until(inp, decision) is None
    assert not settle(None, state_key(inp), inp, decision).holds(state_key(inp), NOW)


def test_settled_once_every_single_node_candidate_was_evaluated_by_some_pass() -> None:
    limits = Limits(single_node_candidates=1)  # one candidate per pass: two passes cover both
    first = two_full_nodes(limits=limits)
    key = state_key(first)
    decision = decide(first)
    assert decision.command is None and decision.single_node_skipped == ["b"]
    settled = settle(None, key, first, decision)
    assert not settled.holds(key, NOW)
    later = NOW + timedelta(seconds=10)
    second = two_full_nodes(limits=limits, now=later, single_node_first=decision.single_node_skipped)
    settled = settle(settled, key, second, decide(second))
    assert settled.unjudged == frozenset() and settled.holds(key, later)
    assert not settled.holds(StateKey(key.watched + 1, key.side), later), "another cluster state is judged again"
    assert not settled.holds(key, NOW + REVALIDATE), "revalidated after REVALIDATE, as Karpenter does"


def test_passes_cut_short_by_their_time_budget_never_settle() -> None:
    ticks = count(step=10)  # every reading of the clock is 10 s after the last: out of time at once
    inp = two_full_nodes()
    decision = decide(inp, clock=lambda: float(next(ticks)))
    assert decision.timed_out and decision.command is None
    settled = settle(None, state_key(inp), inp, decision)
    assert not settled.holds(state_key(inp), NOW)
    settled = settle(settled, state_key(inp), inp, decision)
    assert not settled.holds(state_key(inp), NOW)


def test_a_lapsed_settlement_starts_over() -> None:
    inp = two_full_nodes()
    key = state_key(inp)
    old = Settlement(key, frozenset({"a"}), False, NOW)
    fresh = settle(old, key, inp, decide(inp))
    assert fresh.unjudged == frozenset() and fresh.finished and fresh.until == NOW + REVALIDATE
