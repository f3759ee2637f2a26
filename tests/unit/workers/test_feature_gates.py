"""Feature gates: Karpenter's names, defaults and syntax; errors name the setting and the fix."""

from __future__ import annotations

import pytest

from workers.feature_gates import DEFAULTS, not_implemented, parse_feature_gates
from workers.settings import Settings


def test_blank_gives_karpenters_defaults() -> None:
    assert parse_feature_gates("") == dict(DEFAULTS)
    assert parse_feature_gates("")["SpotToSpotConsolidation"] is False
    assert parse_feature_gates("")["ReservedCapacity"] is True


def test_a_karpenter_value_applies_unchanged() -> None:
    gates = parse_feature_gates("NodeRepair=false, ReservedCapacity=true,SpotToSpotConsolidation=TRUE,")
    assert gates["SpotToSpotConsolidation"] is True
    assert gates["NodeRepair"] is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SpotToSpot=true", "unknown feature gate 'SpotToSpot'; the gates are NodeRepair, ReservedCapacity"),
        ("SpotToSpotConsolidation", "'SpotToSpotConsolidation' is not Name=true or Name=false"),
        ("SpotToSpotConsolidation=yes", "SpotToSpotConsolidation is 'yes': give true or false"),
        ("NodeRepair=true,NodeRepair=false", "NodeRepair is given twice"),
        ("=true", "'=true' is not Name=true or Name=false"),
    ],
)
def test_a_bad_value_names_the_setting_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        Settings(feature_gates=text)
    assert str(caught.value).startswith("feature_gates (flag --feature-gates, env NODEFLOW_FEATURE_GATES): ")
    assert message in str(caught.value)


def test_the_environment_sets_the_gates() -> None:
    settings = Settings.from_env({"NODEFLOW_FEATURE_GATES": "SpotToSpotConsolidation=true"})
    assert settings.feature_gate_values()["SpotToSpotConsolidation"] is True


def test_only_gates_turned_on_that_nodeflow_lacks_are_reported() -> None:
    assert not_implemented(parse_feature_gates("")) == []
    assert not_implemented(parse_feature_gates("SpotToSpotConsolidation=true")) == []
    assert not_implemented(parse_feature_gates("NodeRepair=true")) == []
    assert not_implemented(parse_feature_gates("NodeRepair=true,NodeOverlay=true,StaticCapacity=true")) == [
        "NodeOverlay",
        "StaticCapacity",
    ]
