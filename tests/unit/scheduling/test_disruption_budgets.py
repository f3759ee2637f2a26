"""NodePool disruption budgets: counts, percentages rounded up, reasons, schedules, nodes disrupting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apis.nodepool import NodePool
from scheduling.disruption import pool_budget
from scheduling.disruption.budgets import budget_nodes
from scheduling.disruption.cron import parse_cron
from tests.unit.scheduling.builders import node_pool
from tests.unit.scheduling.disruption_builders import NOW, bound, budget_pool, codes, karpenter_node, run


def pool_with(*budgets: dict[str, Any]) -> NodePool:
    return node_pool(disruption={"budgets": list(budgets)})


def nodes(count: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [karpenter_node(f"n{i}", "m5.large", **kwargs)[0] for i in range(count)]


def test_nodepool_defaults_are_karpenters() -> None:
    disruption = node_pool().spec.disruption
    assert disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert disruption.consolidate_after == "0s"
    assert [b.model_dump(exclude_none=True) for b in disruption.budgets] == [{"nodes": "10%"}]


@pytest.mark.parametrize(
    ("nodes_spec", "total", "allowed"),
    [("10%", 5, 1), ("10%", 10, 1), ("10%", 11, 2), ("25%", 10, 3), ("0%", 10, 0), ("100%", 3, 3), ("5", 2, 5),
     ("0", 9, 0), ("10%", 0, 0)],
)  # fmt: skip
def test_percentages_round_up(nodes_spec: str, total: int, allowed: int) -> None:
    assert budget_nodes(nodes_spec, total) == allowed
    assert pool_budget(pool_with({"nodes": nodes_spec}), nodes(total), NOW).allowed("Drifted") == allowed


def test_reasons_limit_only_their_methods_and_the_most_restrictive_wins() -> None:
    pool = pool_with({"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "50%"}, {"nodes": "1", "reasons": ["Empty"]})
    budget = pool_budget(pool, nodes(10), NOW)
    assert budget.allowed("Drifted") == 0
    assert budget.allowed("Empty") == 1
    assert budget.allowed("Underutilized") == 5
    assert budget.limit("Drifted").budget_index == 0
    assert budget.limit("Underutilized").budget_index == 1


def test_nodes_already_disrupting_count_against_the_budget() -> None:
    members = nodes(8)
    members += nodes(1, deleting=True)
    members[-1]["metadata"]["name"] = "deleting"
    tainted = karpenter_node("tainted", "m5.large", taints=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}])
    members.append(tainted[0])
    budget = pool_budget(pool_with({"nodes": "3"}), members, NOW)
    assert (budget.total, budget.disrupting, budget.allowed("Empty")) == (10, 2, 1)


def test_uninitialized_and_other_pools_nodes_do_not_count() -> None:
    members = nodes(4) + nodes(3, initialized=False) + nodes(5, pool="other")
    assert pool_budget(pool_with({"nodes": "50%"}), members, NOW).total == 4


BUSINESS_HOURS = {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}


@pytest.mark.parametrize(
    ("now", "active"),
    [
        (datetime(2026, 1, 5, 12, 0, tzinfo=UTC), True),  # Monday noon
        (datetime(2026, 1, 5, 9, 0, tzinfo=UTC), True),  # the hit itself
        (datetime(2026, 1, 5, 16, 59, tzinfo=UTC), True),
        (datetime(2026, 1, 5, 17, 0, tzinfo=UTC), False),  # a hit exactly `duration` ago is outside (now-d, now]
        (datetime(2026, 1, 5, 8, 59, tzinfo=UTC), False),
        (datetime(2026, 1, 10, 12, 0, tzinfo=UTC), False),  # Saturday
    ],
)
def test_scheduled_budget_window(now: datetime, active: bool) -> None:
    budget = pool_budget(pool_with(BUSINESS_HOURS, {"nodes": "100%"}), nodes(4), now)
    assert budget.allowed("Underutilized") == (0 if active else 4)
    limit = budget.limit("Underutilized")
    if active:
        assert limit.window_start == now.replace(hour=9, minute=0)
        assert limit.window_end == now.replace(hour=17, minute=0)
        assert limit.describe("default") == (
            'NodePool default: budget #0 nodes "0" (schedule "0 9 * * mon-fri" for 8h, active 2026-01-05 09:00-'
            "2026-01-05 17:00 UTC) allows 0 more Underutilized disruption(s)"
        )


def test_budget_rejection_inside_the_window_and_deletion_outside() -> None:
    pool = budget_pool(disruption={"budgets": [BUSINESS_HOURS]})
    inside = run([karpenter_node("idle", "m5.xlarge")], [], pools=[pool])
    assert inside.command is None
    assert [(r.method, r.code) for r in inside.why("idle")] == [
        ("Emptiness", "Budget"),
        ("SingleNodeConsolidation", "Budget"),
    ]
    assert "budget #0" in inside.why("idle")[0].message
    outside = run([karpenter_node("idle", "m5.xlarge")], [], pools=[pool], now=NOW + timedelta(hours=8))
    assert outside.command is not None and outside.command.method == "Emptiness"


def test_budget_by_reason_blocks_drift_but_not_consolidation() -> None:
    pool = budget_pool(disruption={"budgets": [{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "100%"}]})
    machines = [karpenter_node("old", "m5.4xlarge", drifted=True)]
    decision = run(machines, [bound("a", "old", cpu="500m")], pools=[pool])
    assert decision.command is not None and decision.command.method == "SingleNodeConsolidation"
    assert [(r.method, r.code) for r in decision.why("old")] == [("Drift", "Budget")]


def test_disrupting_nodes_use_up_the_budget_of_a_decision() -> None:
    deleting = karpenter_node("going", "m5.xlarge", deleting=True)
    decision = run([deleting, karpenter_node("idle", "m5.xlarge")], [], pools=[budget_pool("1")])
    assert decision.command is None
    assert set(codes(decision, "idle")) == {"Budget"}


@pytest.mark.parametrize(
    ("expression", "now", "window", "fired"),
    [
        ("@daily", datetime(2026, 1, 5, 3, 0, tzinfo=UTC), timedelta(hours=4), datetime(2026, 1, 5, 0, 0, tzinfo=UTC)),
        ("*/15 * * * *", datetime(2026, 1, 5, 3, 7, tzinfo=UTC), timedelta(minutes=10),
         datetime(2026, 1, 5, 3, 0, tzinfo=UTC)),
        ("30 22 * * sun", datetime(2026, 1, 5, 1, 0, tzinfo=UTC), timedelta(hours=3),
         datetime(2026, 1, 4, 22, 30, tzinfo=UTC)),
        ("0 0 1 jan *", datetime(2026, 1, 5, 1, 0, tzinfo=UTC), timedelta(hours=3), None),
        ("0 0 1,15 * 5", datetime(2026, 1, 9, 1, 0, tzinfo=UTC), timedelta(hours=3),  # Friday: day-of-week matches
         datetime(2026, 1, 9, 0, 0, tzinfo=UTC)),
        ("0 12 * * 7", datetime(2026, 1, 4, 12, 30, tzinfo=UTC), timedelta(hours=1),  # 7 is Sunday
         datetime(2026, 1, 4, 12, 0, tzinfo=UTC)),
    ],
)  # fmt: skip
def test_cron_last_fire(expression: str, now: datetime, window: timedelta, fired: datetime | None) -> None:
    assert parse_cron(expression).last_fire(now, window) == fired


@pytest.mark.parametrize("expression", ["* * * *", "60 * * * *", "0 0 * * funday", "*/0 * * * *", "5-1 * * * *"])
def test_cron_rejects(expression: str) -> None:
    with pytest.raises(ValueError):
        parse_cron(expression)


def test_a_schedule_cron_cannot_read_fails_closed() -> None:
    # The CRD pattern accepts any five fields; a minute of 99 is caught only when evaluated: allow nothing.
    budget = pool_budget(pool_with({"nodes": "100%", "schedule": "99 * * * *", "duration": "1h"}), nodes(4), NOW)
    assert budget.allowed("Empty") == 0
