"""Split consolidation (nodeflow's own method): one underused node replaced by several smaller ones when
they cost at least 25% less; never when another method acts, a budget is closed or the gate is off."""

from __future__ import annotations

from typing import Any

import pytest

from apis.instancetype import InstanceType
from scheduling.disruption import Decision
from scheduling.disruption.candidates import build_states
from scheduling.disruption.simulate import Simulator
from scheduling.disruption.split import SPLIT_MIN_SAVING, best_split, cheapest_per_unit, size_caps, split_price_floor
from scheduling.types import SchedulingInput
from tests.unit.scheduling.builders import instance_type, node_pool
from tests.unit.scheduling.disruption_builders import (
    NOW,
    bound,
    budget_pool,
    karpenter_node,
    node_class,
    on_demand_pool,
    run,
)


def two_sizes(small_price: float) -> list[InstanceType]:
    """One large type (64 vCPU, $4/h) and one small (8 vCPU) at `small_price`: a node of the large type
    holding four 6-vCPU pods fits no cheaper single type, but four small nodes would do."""
    return [instance_type("big.16xlarge", 64, 256, 4.0), instance_type("small.2xlarge", 8, 32, small_price)]


def decide(types: list[InstanceType], pods: int = 4, capacity_type: str = "on-demand", **kwargs: Any) -> Decision:
    machines = [karpenter_node("n1", "big.16xlarge", types=types, capacity_type=capacity_type)]
    bound_pods = [bound(f"p{i}", "n1", cpu="6", memory="8Gi") for i in range(pods)]
    return run(machines, bound_pods, types=types, **kwargs)


def test_a_large_half_empty_node_is_split_into_smaller_ones_that_cost_clearly_less() -> None:
    decision = decide(two_sizes(small_price=0.3))
    command = decision.command
    assert command is not None
    assert (command.method, command.reason, command.action) == ("SplitConsolidation", "Underutilized", "Replace")
    assert [c.node for c in command.candidates] == ["n1"]
    assert [r.instance_types for r in command.replacements] == [["small.2xlarge"]] * 4
    assert sorted(p for r in command.replacements for p in r.pods) == [f"default/p{i}" for i in range(4)]
    assert command.price == pytest.approx(4.0) and command.replacement_price == pytest.approx(1.2)
    assert command.message == "split n1 ($4.0000/h) into 4 nodes from 4x small.2xlarge at $1.2000/h"
    single = [r for r in decision.why("n1") if r.method == "SingleNodeConsolidation"]
    assert [r.code for r in single] == ["NotCheaper"]  # Karpenter's methods had nothing


@pytest.mark.parametrize(
    ("small_price", "pods", "pool", "gate", "capacity_type", "code", "message"),
    [
        (0.8, 4, None, False, "on-demand", "SplitNotCheaper",
         "the cheapest split, 4 nodes from 4x small.2xlarge at $3.2000/h, saves 20% of $4.0000/h; a split needs "
         "at least 25%"),
        (0.3, 4, "spot", False, "spot", "NoSplit",
         "replacing spot with spot needs the SpotToSpotConsolidation feature gate (off)"),
        (0.3, 1, None, False, "on-demand", None, None),  # one pod: nothing to split
        (0.3, 4, "zero-budget", False, "on-demand", None, None),
    ],
)  # fmt: skip
def test_no_split(
    small_price: float,
    pods: int,
    pool: str | None,
    gate: bool,
    capacity_type: str,
    code: str | None,
    message: str | None,
) -> None:
    pools = {None: None, "spot": [node_pool()], "zero-budget": [budget_pool("0")]}[pool]
    decision = decide(two_sizes(small_price), pods, capacity_type, pools=pools, spot_to_spot_consolidation=gate)
    assert decision.command is None or decision.command.method != "SplitConsolidation"
    split = [(r.code, r.message) for r in decision.why("n1") if r.method == "SplitConsolidation"]
    assert split == ([(code, message)] if code else [])


def test_spot_node_split_into_spot_with_the_gate() -> None:
    decision = decide(two_sizes(small_price=0.3), capacity_type="spot", pools=[node_pool()],
                      spot_to_spot_consolidation=True)  # fmt: skip
    command = decision.command
    assert command is not None and command.method == "SplitConsolidation"
    assert {r.labels.get("karpenter.sh/capacity-type") for r in command.replacements} == {"spot"}


def test_a_cheaper_single_replacement_wins_over_a_split() -> None:
    types = [*two_sizes(small_price=0.3), instance_type("mid.8xlarge", 32, 128, 1.0)]
    command = decide(types).command
    assert command is not None
    assert (command.method, [r.instance_types[0] for r in command.replacements]) == (
        "SingleNodeConsolidation",
        ["mid.8xlarge"],
    )


def test_size_caps_are_the_catalogs_vcpu_counts_below_the_node() -> None:
    types = [instance_type(f"t{cpu}", cpu, cpu * 4, 0.1 * cpu) for cpu in (2, 4, 8, 8, 16, 64)]
    assert size_caps(types, 16_000) == [8_000, 4_000, 2_000]
    assert SPLIT_MIN_SAVING == 0.25


def test_a_node_whose_pods_cost_too_much_anywhere_is_not_searched_for_a_split() -> None:
    """Ten 6-vCPU pods on the 64-vCPU node: at the catalog's cheapest price per vCPU (the large type's own)
    any set of new nodes for them costs over 75% of the node, so no size cap is simulated."""
    decision = decide(two_sizes(small_price=2.0), pods=10)
    split = [r for r in decision.why("n1") if r.method == "SplitConsolidation"]
    assert [r.code for r in split] == ["SplitNotCheaper"]
    assert split[0].message.startswith("any split costs at least $3.7")
    assert decision.simulations <= 1  # single-node consolidation's run only


@pytest.mark.parametrize("small_price", [0.1, 0.3, 0.5, 0.8, 1.5])
@pytest.mark.parametrize("pods", [2, 4, 7, 10])
def test_the_floor_never_exceeds_a_split_the_search_finds(small_price: float, pods: int) -> None:
    types = two_sizes(small_price)
    machines = [karpenter_node("n1", "big.16xlarge", types=types)]
    cluster = SchedulingInput(
        bound_pods=[bound(f"p{i}", "n1", cpu="6", memory="8Gi") for i in range(pods)],
        nodes=[n for n, _ in machines],
        node_claims=[c for _, c in machines],
        node_pools=[on_demand_pool()],
        node_classes=[node_class()],
        instance_types=types,
    )
    simulator = Simulator(cluster)
    state = next(s for s in build_states(cluster.nodes, cluster.node_claims, cluster.node_pools,
                                         cluster.bound_pods, types, NOW) if s.name == "n1")  # fmt: skip
    found, _ = best_split(state, simulator, types, {t.name: t for t in types}, False, lambda: False)
    floor = split_price_floor(state, simulator, cheapest_per_unit(types, cluster.node_pools))
    assert floor > 0
    if found is not None:
        assert floor <= found.price + 1e-9
