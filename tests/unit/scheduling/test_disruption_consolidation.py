"""Karpenter's disruption methods, restated: emptiness, drift, multi-node and single-node consolidation."""

from __future__ import annotations

import json

import pytest

from apis.instancetype import InstanceType
from scheduling.disruption import Decision, Limits
from scheduling.disruption.candidates import NodeState
from scheduling.disruption.decide import filter_out_same_type
from tests.unit.scheduling.builders import instance_type, node_pool
from tests.unit.scheduling.disruption_builders import (
    bound,
    budget_pool,
    codes,
    karpenter_node,
    on_demand_pool,
    run,
)


def linear_catalog(count: int = 20) -> list[InstanceType]:
    """`count` types t01..tNN with i vCPUs and 4i GiB at $0.05 x i on-demand (spot 40%)."""
    return [instance_type(f"t{i:02d}", i, 4 * i, round(0.05 * i, 4)) for i in range(1, count + 1)]


def test_empty_node_is_deleted_first() -> None:
    decision = run(
        [karpenter_node("busy", "m5.xlarge"), karpenter_node("idle", "m5.xlarge")],
        [bound("a", "busy", cpu="3")],
        pools=[budget_pool()],
    )
    assert decision.command is not None
    assert (decision.command.method, decision.command.action) == ("Emptiness", "Delete")
    assert [c.node for c in decision.command.candidates] == ["idle"]


def test_daemonset_mirror_and_terminal_pods_do_not_make_a_node_non_empty() -> None:
    pods = [
        bound("ds", "idle", owner="DaemonSet"),
        bound("mirror", "idle", annotations={"kubernetes.io/config.mirror": "x"}),
        {**bound("done", "idle"), "status": {"phase": "Succeeded"}},
    ]
    decision = run([karpenter_node("idle", "m5.xlarge")], pods, pools=[budget_pool()])
    assert decision.command is not None and decision.command.method == "Emptiness"


def test_single_node_replaced_with_a_cheaper_type() -> None:
    decision = run(
        [karpenter_node("big", "m5.4xlarge")], [bound("a", "big", cpu="500m"), bound("b", "big", cpu="500m")]
    )
    command = decision.command
    assert command is not None
    assert (command.method, command.action) == ("SingleNodeConsolidation", "Replace")
    assert command.price == pytest.approx(0.768)
    assert command.replacements[0].instance_types[0] == "c5.large"
    assert command.replacement_price is not None and command.replacement_price < 0.768


def test_no_replacement_when_not_cheaper() -> None:
    decision = run([karpenter_node("small", "c5.large")], [bound("a", "small", cpu="1500m", memory="1Gi")])
    assert decision.command is None
    [why] = [r for r in decision.why("small") if r.method == "SingleNodeConsolidation"]
    assert why.code == "NotCheaper"
    assert why.message == "no cheaper replacement: cheapest option c5.large at $0.0850/h vs current $0.0850/h"


def test_single_node_deleted_when_its_pods_fit_elsewhere() -> None:
    machines = [karpenter_node("n1", "m5.xlarge"), karpenter_node("n2", "m5.xlarge")]
    decision = run(machines, [bound("a", "n1"), bound("b", "n2")])  # default budget 10% of 2 = 1: no multi-node
    command = decision.command
    assert command is not None
    assert (command.method, command.action, [c.node for c in command.candidates]) == (
        "SingleNodeConsolidation",
        "Delete",
        ["n1"],
    )


def test_multi_node_merges_underutilized_nodes_into_one() -> None:
    machines = [karpenter_node(f"n{i}", "m5.xlarge") for i in range(1, 4)]
    pods = [bound(f"p{i}", f"n{i}", cpu="1") for i in range(1, 4)]
    decision = run(machines, pods, pools=[budget_pool("100%")])
    command = decision.command
    assert command is not None
    assert (command.method, command.action) == ("MultiNodeConsolidation", "Replace")
    assert sorted(c.node for c in command.candidates) == ["n1", "n2", "n3"]
    assert len(command.replacements) == 1
    assert command.replacement_price is not None and command.replacement_price < 3 * 0.192


def test_on_demand_replaced_by_spot_when_the_pool_allows_spot() -> None:
    decision = run([karpenter_node("big", "m5.4xlarge")], [bound("a", "big", cpu="500m")], pools=[node_pool()])
    command = decision.command
    assert command is not None and command.action == "Replace"
    assert command.replacements[0].labels["karpenter.sh/capacity-type"] == "spot"
    ct = next(r for r in command.replacements[0].requirements if r.key == "karpenter.sh/capacity-type")
    assert ct.values == ["spot"]


@pytest.mark.parametrize(
    ("gate", "node_type", "expected"),
    [
        (False, "t20", "SpotToSpotDisabled"),  # gate off: never spot to spot
        (True, "t10", "SpotToSpotFlexibility"),  # 9 cheaper types (< 15)
        (True, "t20", "Replace"),  # 19 cheaper types: replace, launching with the 15 cheapest
    ],
)
def test_spot_to_spot(gate: bool, node_type: str, expected: str) -> None:
    types = linear_catalog()
    machine = karpenter_node("spot", node_type, types=types, capacity_type="spot")
    decision = run([machine], [bound("a", "spot", cpu="100m", memory="128Mi")], pools=[node_pool()], types=types,
                   spot_to_spot_consolidation=gate)  # fmt: skip
    if expected == "Replace":
        assert decision.command is not None and decision.command.action == "Replace"
        assert len(decision.command.replacements[0].instance_types) == 15
        assert decision.command.replacements[0].labels["karpenter.sh/capacity-type"] == "spot"
    else:
        assert decision.command is None
        assert expected in codes(decision, "spot")


def test_drift_is_chosen_before_consolidation() -> None:
    machines = [
        karpenter_node("old", "m5.xlarge", drifted=True),
        karpenter_node("under", "m5.4xlarge"),
    ]
    pods = [bound("a", "old", cpu="3"), bound("b", "under", cpu="500m")]
    decision = run(machines, pods, pools=[budget_pool()])
    command = decision.command
    assert command is not None
    assert (command.method, command.reason, [c.node for c in command.candidates]) == ("Drift", "Drifted", ["old"])


def test_emptiness_is_chosen_before_drift() -> None:
    """Karpenter's controller tries emptiness first (it moves no pod), then drift."""
    machines = [karpenter_node("old", "m5.xlarge", drifted=True), karpenter_node("idle", "m5.xlarge")]
    decision = run(machines, [bound("a", "old", cpu="3")], pools=[budget_pool()])
    command = decision.command
    assert command is not None
    assert (command.method, [c.node for c in command.candidates]) == ("Emptiness", ["idle"])


def test_drift_replaces_even_when_not_cheaper_and_ignores_consolidate_after() -> None:
    machine = karpenter_node("old", "c5.large", drifted=True)
    pool = budget_pool(disruption={"consolidateAfter": "Never"})
    decision = run([machine], [bound("a", "old", cpu="1500m")], pools=[pool])
    assert decision.command is not None
    assert (decision.command.method, decision.command.action) == ("Drift", "Replace")


def test_drift_with_termination_grace_period_is_not_blocked_by_do_not_disrupt() -> None:
    pods = [bound("a", "old", annotations={"karpenter.sh/do-not-disrupt": "true"})]
    blocked = run([karpenter_node("old", "m5.xlarge", drifted=True)], pods, pools=[budget_pool()])
    assert blocked.command is None and "PodDoNotDisrupt" in codes(blocked, "old")
    machine = karpenter_node("old", "m5.xlarge", drifted=True, termination_grace_period="1h")
    eventual = run([machine], pods, pools=[budget_pool()])
    assert eventual.command is not None and eventual.command.method == "Drift"


def test_when_empty_policy_ignores_underutilized_but_deletes_empty() -> None:
    pool = budget_pool(disruption={"consolidationPolicy": "WhenEmpty"})
    machines = [karpenter_node("big", "m5.4xlarge"), karpenter_node("idle", "m5.xlarge")]
    decision = run(machines, [bound("a", "big", cpu="500m")], pools=[pool])
    assert decision.command is not None and [c.node for c in decision.command.candidates] == ["idle"]
    only_big = run([karpenter_node("big", "m5.4xlarge")], [bound("a", "big", cpu="500m")], pools=[pool])
    assert only_big.command is None
    assert codes(only_big, "big") == ["ConsolidationPolicy"]


def test_decision_is_json_serialisable_and_round_trips() -> None:
    decision = run([karpenter_node("small", "c5.large")], [bound("a", "small", cpu="1500m")])
    again = Decision.model_validate(json.loads(decision.model_dump_json()))
    assert again == decision
    assert again.budgets[0].node_pool == "default"


def test_static_pool_is_never_consolidated() -> None:
    pool = on_demand_pool(replicas=1)
    decision = run([karpenter_node("idle", "m5.xlarge")], [], pools=[pool])
    assert decision.command is None
    assert codes(decision, "idle") == ["StaticNodePool"]


def test_single_node_evaluates_a_bounded_number_of_candidates() -> None:
    machines = [karpenter_node(f"n{i}", "c5.large") for i in range(3)]
    pods = [bound(f"p{i}", f"n{i}", cpu="1500m") for i in range(3)]
    decision = run(machines, pods, pools=[budget_pool()], limits=Limits(single_node_candidates=1))
    assert decision.command is None
    assert [r.code for r in decision.rejections if r.method == "SingleNodeConsolidation"] == [
        "NotCheaper",
        "NotEvaluated",
        "NotEvaluated",
    ]
    assert decision.single_node_skipped == ["n1", "n2"]
    resumed = run(machines, pods, pools=[budget_pool()], limits=Limits(single_node_candidates=1),
                  single_node_first=decision.single_node_skipped)  # fmt: skip
    assert [(r.node, r.code) for r in resumed.rejections if r.method == "SingleNodeConsolidation"] == [
        ("n1", "NotCheaper"),
        ("n2", "NotEvaluated"),
        ("n0", "NotEvaluated"),
    ]


def test_time_budget_stops_the_pass_and_says_so() -> None:
    ticks = iter(range(100))
    machines = [karpenter_node(f"n{i}", "c5.large") for i in range(3)]
    pods = [bound(f"p{i}", f"n{i}", cpu="1500m") for i in range(3)]
    decision = run(machines, pods, pools=[budget_pool()], limits=Limits(seconds=0.5), clock=lambda: next(ticks))
    assert decision.command is None and decision.timed_out
    assert "time budget spent" in decision.why("n0")[-1].message


def test_equal_price_within_float_noise_is_not_cheaper() -> None:
    types = [instance_type("one", 1, 4, 0.197, spot=False), instance_type("eleven", 11, 44, 2.167, spot=False)]
    machines = [karpenter_node(f"n{i:02d}", "one", types=types) for i in range(11)]
    pods = [bound(f"p{i:02d}", f"n{i:02d}", cpu="1", memory="1Gi") for i in range(11)]
    decision = run(machines, pods, pools=[budget_pool()], types=types)
    assert decision.command is None


def test_describe_prints_the_command_budgets_and_rejections() -> None:
    decision = run([karpenter_node("small", "c5.large")], [bound("a", "small", cpu="1500m")])
    text = decision.describe("small")
    assert text.splitlines()[0] == "command: none"
    assert "NodePool default: 1 node(s), 0 disrupting" in text
    assert 'budget #0 nodes "10%" allows 1 more Underutilized disruption(s)' in text
    assert "small [SingleNodeConsolidation] NotCheaper: no cheaper replacement" in text


def _state(name: str, instance_type: str, price: float | None) -> NodeState:
    return NodeState(name=name, node={}, claim=None, pool=None, instance_type=instance_type, price=price)


@pytest.mark.parametrize(
    ("candidates", "options", "kept"),
    [
        # Karpenter's example: [2xl, 2xl, small] -> one of {small, xl, 2xl}: keeping the small node and
        # deleting the others does as well, so nothing is left.
        ([("2xl", 0.33), ("2xl", 0.33), ("small", 0.02)], [(0.02, "small"), (0.17, "xl"), (0.33, "2xl")], []),
        # ... and with a nano option, only the nano stays.
        ([("2xl", 0.33), ("2xl", 0.33), ("small", 0.02)], [(0.005, "nano"), (0.02, "small"), (0.33, "2xl")],
         [(0.005, "nano")]),
        # No candidate type among the options: nothing is filtered.
        ([("2xl", 0.33), ("xl", 0.17)], [(0.02, "small"), (0.04, "medium")], [(0.02, "small"), (0.04, "medium")]),
        # Only the candidate types that are options set the ceiling (xl is not an option here).
        ([("xl", 0.17), ("2xl", 0.33)], [(0.08, "large"), (0.2, "m.xl"), (0.33, "2xl")],
         [(0.08, "large"), (0.2, "m.xl")]),
        # Two nodes of one type at different prices (e.g. zones): the cheaper one sets the ceiling.
        ([("xl", 0.17), ("xl", 0.15)], [(0.1, "large"), (0.15, "xl"), (0.16, "c.xl")], [(0.1, "large")]),
        # An option at the same price as the existing node is not cheaper.
        ([("xl", 0.17), ("2xl", 0.33)], [(0.17, "m.xl"), (0.17, "xl")], []),
        # A candidate of unknown price counts as free: no option passes.
        ([("xl", None), ("2xl", 0.33)], [(0.05, "medium"), (0.17, "xl")], []),
    ],
)  # fmt: skip
def test_filter_out_same_type(
    candidates: list[tuple[str, float | None]], options: list[tuple[float, str]], kept: list[tuple[float, str]]
) -> None:
    states = [_state(f"n{i}", it, price) for i, (it, price) in enumerate(candidates)]
    assert filter_out_same_type(options, states) == kept


def test_multi_node_does_not_replace_nodes_with_the_type_of_one_of_them() -> None:
    # Merging big1, big2 and small (4 vCPUs of pods) needs a t04, small's own type: deleting big1 and
    # big2 onto small does as well and moves fewer pods, so the binary search keeps that prefix.
    types = linear_catalog()
    machines = [karpenter_node("big1", "t08", types), karpenter_node("big2", "t08", types)]
    machines.append(karpenter_node("small", "t04", types))
    pods = [bound("p1", "big1", cpu="1"), bound("p2", "big2", cpu="1"), bound("p3", "small", cpu="2")]
    command = run(machines, pods, pools=[budget_pool("100%")], types=types).command
    assert command is not None
    assert (command.method, command.action) == ("MultiNodeConsolidation", "Delete")
    assert [c.node for c in command.candidates] == ["big1", "big2"]
