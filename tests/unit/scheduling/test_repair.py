"""scheduling.repair: which unhealthy Nodes are repaired (Ready False/Unknown for 30 minutes), and the
20%-of-a-NodePool limit (Karpenter's, rounded up) above which none is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduling.repair import allowed_unhealthy, decide_repairs, unhealthy_for

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def node(
    name: str, ready: str | None = "True", minutes_ago: float = 60, pool: str | None = "default"
) -> dict[str, Any]:
    conditions = [{"type": "MemoryPressure", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    if ready is not None:
        since = (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions.append({"type": "Ready", "status": ready, "lastTransitionTime": since})
    labels = {"karpenter.sh/nodepool": pool} if pool else {}
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"conditions": conditions}}


def claims(*names: str) -> dict[str, str]:
    return {n: f"claim-{n}" for n in names}


def pool(prefix: str, healthy: int, sick: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [node(f"{prefix}-ok-{i}", pool=prefix) for i in range(healthy)] + sick


@pytest.mark.parametrize(("nodes", "allowed"), [(0, 0), (1, 1), (4, 1), (5, 1), (6, 2), (10, 2), (11, 3), (15, 3)])
def test_the_allowed_share_is_20_percent_rounded_up(nodes: int, allowed: int) -> None:
    assert allowed_unhealthy(nodes) == allowed


def test_ready_false_or_unknown_for_30_minutes_is_repaired_sooner_is_not() -> None:
    sick = [
        node("a", "False", 31, "p"),
        node("b", "Unknown", 30, "p"),
        node("c", "False", 29, "p"),
        node("d", "True", 600, "p"),
        node("e", None, 600, "p"),  # no Ready condition: not judged
    ]
    nodes = pool("p", 20, sick)
    decision = decide_repairs(nodes, claims(*(n["metadata"]["name"] for n in nodes)), NOW)
    assert [(r.node, r.node_claim, r.node_pool) for r in decision.repairs] == [
        ("a", "claim-a", "p"),
        ("b", "claim-b", "p"),
    ]
    assert decision.repairs[0].message == "Node a has been Ready=False for 31m"
    assert decision.repairs[1].message == "Node b has been Ready=Unknown for 30m"
    assert decision.blocked == ()


def test_more_than_20_percent_unhealthy_blocks_the_whole_pool_only() -> None:
    # pool "big": 10 nodes, 3 unhealthy (one of them only for a minute, it still counts) > 2: none repaired
    big = pool(
        "big",
        7,
        [node("big-1", "False", 40, "big"), node("big-2", "False", 40, "big"), node("big-3", "Unknown", 1, "big")],
    )
    # pool "small": 5 nodes, 1 unhealthy = 1 allowed: repaired
    small = pool("small", 4, [node("small-1", "False", 40, "small")])
    nodes = big + small
    decision = decide_repairs(nodes, claims(*(n["metadata"]["name"] for n in nodes)), NOW)
    assert [r.node for r in decision.repairs] == ["small-1"]
    assert [(b.node_pool, b.unhealthy, b.nodes, b.allowed) for b in decision.blocked] == [("big", 3, 10, 2)]
    assert decision.blocked[0].message.startswith("3 of the NodePool's 10 nodes are unhealthy, more than 20% (2)")


def test_a_node_without_a_node_claim_or_a_node_pool_is_not_repaired() -> None:
    nodes = [node("mine", "False", 60), node("unclaimed", "False", 60), node("foreign", "False", 60, pool=None)]
    nodes += [node(f"ok-{i}", pool="default") for i in range(20)]
    decision = decide_repairs(nodes, claims("mine", "foreign"), NOW)
    assert [r.node for r in decision.repairs] == ["mine"]


def test_an_unreadable_transition_time_is_not_judged() -> None:
    broken = node("x", "False")
    broken["status"]["conditions"][-1]["lastTransitionTime"] = "yesterday"
    assert unhealthy_for(broken, NOW) is None
    assert decide_repairs([broken], claims("x"), NOW).repairs == ()
    assert unhealthy_for(node("y", "False", 45), NOW) == timedelta(minutes=45)
    assert unhealthy_for(node("z", "True", 45), NOW) is None
