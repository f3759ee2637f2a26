"""The ReplicaSet controller's choice of surplus pods on scale-down, as a pure ordering.

The rules are Kubernetes' (``ActivePodsWithRanks``): unbound, earlier phase, not ready, lower
pod-deletion-cost, more pods of the same owner on the node, ready for less time, more restarts, newer.
"""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

import pytest

from devstack.kube.controllers.replicaset import DELETION_COST, deletion_order

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def stamp(seconds_ago: float) -> str:
    return (NOW - datetime.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    node: str = "",
    phase: str = "Running",
    ready: bool = True,
    ready_ago: float = 600.0,
    created_ago: float = 700.0,
    cost: str | None = None,
    restarts: int = 0,
) -> dict[str, Any]:
    """A ReplicaSet pod; its uid is its name, so uid tie-breaks are predictable."""
    meta: dict[str, Any] = {"name": name, "uid": name, "creationTimestamp": stamp(created_ago)}
    if cost is not None:
        meta["annotations"] = {DELETION_COST: cost}
    conditions = [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp(ready_ago)}]
    status = {"phase": phase, "conditions": conditions, "containerStatuses": [{"restartCount": restarts}]}
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def scale_down(pods: list[dict[str, Any]], to: int) -> list[dict[str, Any]]:
    """The pods left after one scale-down step to `to` replicas (one ranking, like one sync)."""
    return deletion_order(pods, pods, NOW)[len(pods) - to :]


@pytest.mark.parametrize(
    ("first", "second", "rule"),
    [(pod("a"), pod("b", node="n"), "unassigned before assigned"),
     (pod("a", node="n", phase="Pending"), pod("b", node="n", phase="Unknown"), "Pending before Unknown"),
     (pod("a", node="n", phase="Unknown"), pod("b", node="n", phase="Running"), "Unknown before Running"),
     (pod("a", node="n", ready=False), pod("b", node="n"), "not ready before ready"),
     (pod("z", node="n", cost="-5"), pod("a", node="n"), "lower deletion cost first"),
     (pod("z", node="n", cost="10"), pod("a", node="n", cost="200"), "lower deletion cost first"),
     (pod("z", node="n", ready_ago=10), pod("a", node="n", ready_ago=1000), "ready for less time first"),
     (pod("z", node="n", restarts=3), pod("a", node="n", restarts=1), "more restarts first"),
     (pod("z", node="n", ready_ago=600, created_ago=601), pod("a", node="n", ready_ago=600, created_ago=5000),
      "newer first"),
     (pod("a", node="n", ready_ago=600), pod("b", node="n", ready_ago=700), "same age bucket: uid order"),
     (pod("a", node="n", cost="not-a-number"), pod("b", node="n", cost="1"), "an invalid cost counts as 0")],
)  # fmt: skip
def test_each_rule_decides_between_two_pods(first: dict[str, Any], second: dict[str, Any], rule: str) -> None:
    for pods in ([first, second], [second, first]):
        assert names(deletion_order(pods, pods, NOW)) == names([first, second]), rule


def test_the_rules_apply_in_order() -> None:
    # An unbound pod goes first even at a high deletion cost; the cost beats co-location.
    crowded = [pod(f"c{i}", node="crowded") for i in range(5)]
    unbound = pod("u", cost="1000")
    cheap_alone = pod("alone", node="quiet", cost="-1")
    pods = [*crowded, unbound, cheap_alone]
    order = names(deletion_order(pods, pods, NOW))
    assert order[:2] == ["u", "alone"]
    assert set(order[2:]) == {f"c{i}" for i in range(5)}


def test_a_crowded_node_loses_its_pods_first_so_survivors_spread() -> None:
    # 6 nodes: one holds 10 pods of the ReplicaSet, five hold 1. Down to 6: one per node.
    pods = [pod(f"big-{i:02}", node="node-0") for i in range(10)]
    pods += [pod(f"solo-{n}", node=f"node-{n}") for n in range(1, 6)]
    left = scale_down(pods, 6)
    assert Counter(p["spec"]["nodeName"] for p in left) == {f"node-{n}": 1 for n in range(6)}


def test_scaling_six_full_nodes_down_one_replica_at_a_time_leaves_one_per_node() -> None:
    # 6 nodes x 10 pods, all alike. Each step ranks again, so the most crowded node loses a pod.
    pods = [pod(f"p-{n}-{i}", node=f"node-{n}") for n in range(6) for i in range(10)]
    for replicas in range(59, 5, -1):
        pods = scale_down(pods, replicas)
        counts = Counter(p["spec"]["nodeName"] for p in pods)
        assert max(counts.values()) - min(counts.values()) <= 1
    assert Counter(p["spec"]["nodeName"] for p in pods) == {f"node-{n}": 1 for n in range(6)}


def test_one_step_ranks_once_so_equal_nodes_keep_their_uid_order() -> None:
    # 6 nodes x 10 alike pods scaled to 6 in one step: ranks tie (10 each) and stay as ranked before
    # the deletions, so, as upstream, the survivors are the last pods in uid order, not one per node.
    pods = [pod(f"p-{n}-{i}", node=f"node-{n}") for n in range(6) for i in range(10)]
    assert names(scale_down(pods, 6)) == ["p-5-4", "p-5-5", "p-5-6", "p-5-7", "p-5-8", "p-5-9"]


def test_co_location_counts_the_pods_of_sibling_replicasets() -> None:
    # Rank counts related pods (every ReplicaSet of the Deployment), not only the ReplicaSet's own.
    mine = [pod("m-a", node="a"), pod("m-b", node="b")]
    sibling = [pod(f"old-{i}", node="b") for i in range(3)]
    assert names(deletion_order(mine, [*mine, *sibling], NOW)) == ["m-b", "m-a"]
    assert names(deletion_order(mine, mine, NOW)) == ["m-a", "m-b"]  # a tie: uid order


def test_inactive_related_pods_do_not_count() -> None:
    mine = [pod("m-a", node="a"), pod("m-b", node="b")]
    finished = [{**pod(f"done-{i}", node="b"), "status": {"phase": "Succeeded"}} for i in range(3)]
    assert names(deletion_order(mine, [*mine, *finished], NOW)) == ["m-a", "m-b"]
