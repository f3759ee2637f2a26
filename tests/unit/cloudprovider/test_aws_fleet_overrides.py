"""The CreateFleet override cap with minValues (cloudprovider.aws.launch.fleet_overrides.limit_overrides)."""

from __future__ import annotations

from dataclasses import dataclass

from cloudprovider.aws.launch.fleet_overrides import MAX_OVERRIDES, limit_overrides

FAMILY = "karpenter.k8s.aws/instance-family"
TYPE = "node.kubernetes.io/instance-type"


@dataclass(frozen=True)
class Ov:
    instance_type: str
    zone: str

    @property
    def family(self) -> str:
        return self.instance_type.split(".")[0]


def value(ov: Ov, key: str) -> str | None:
    return {FAMILY: ov.family, TYPE: ov.instance_type}.get(key)


def cheapest_first(families: int, sizes: int, zones: int) -> list[Ov]:
    """Family 0 is cheapest, then 1, ...: every size of a family in every zone before the next family."""
    return [Ov(f"f{f}.s{s}", f"z{z}") for f in range(families) for s in range(sizes) for z in range(zones)]


def test_under_the_cap_everything_is_kept_in_order() -> None:
    overrides = cheapest_first(2, 3, 3)
    assert limit_overrides(overrides, value, {FAMILY: 5}) == overrides


def test_the_cap_keeps_the_cheapest_without_min_values() -> None:
    overrides = cheapest_first(10, 10, 3)
    assert limit_overrides(overrides, value, {}) == overrides[:MAX_OVERRIDES]


def test_min_values_pulls_in_the_cheapest_override_of_each_missing_value() -> None:
    overrides = cheapest_first(10, 10, 3)  # the 60 cheapest are families f0 and f1 only
    kept = limit_overrides(overrides, value, {FAMILY: 5})
    assert len(kept) == MAX_OVERRIDES
    assert {o.family for o in kept} == {"f0", "f1", "f2", "f3", "f4"}
    for family in ("f2", "f3", "f4"):
        assert Ov(f"{family}.s0", "z0") in kept  # the cheapest of that family
    assert kept == [o for o in overrides if o in kept]  # still cheapest first
    assert kept[:57] == overrides[:57]  # the rest of the places go to the cheapest


def test_several_keys_are_honoured_together() -> None:
    overrides = cheapest_first(10, 10, 3)
    kept = limit_overrides(overrides, value, {FAMILY: 4, TYPE: 30})
    assert len({o.family for o in kept}) >= 4
    assert len({o.instance_type for o in kept}) >= 30


def test_the_cap_wins_when_min_values_cannot_fit() -> None:
    overrides = cheapest_first(80, 1, 1)
    kept = limit_overrides(overrides, value, {FAMILY: 70}, limit=60)
    assert kept == overrides[:60]
