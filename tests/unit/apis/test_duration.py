"""Durations: Go parsing and formatting, and Karpenter's stricter CRD patterns for the fields."""

from __future__ import annotations

import re
from datetime import timedelta

import pydantic
import pytest

from apis.values.duration import (
    BudgetDuration,
    Duration,
    FiniteDuration,
    format_duration,
    parse_duration,
    validate_budget_duration,
    validate_duration,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [("720h", timedelta(hours=720)), ("1h30m", timedelta(minutes=90)), ("30s", timedelta(seconds=30)),
     ("1.5h", timedelta(minutes=90)), ("250ms", timedelta(milliseconds=250)), ("Never", None)],
)  # fmt: skip
def test_parse_duration_reads_go_durations(text: str, value: timedelta | None) -> None:
    assert parse_duration(text) == value


@pytest.mark.parametrize("text", ["", "30d", "1h 30m", "h", "-5m"])
def test_parse_duration_rejects_other_text(text: str) -> None:
    with pytest.raises(ValueError, match="use a number and a unit"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [(timedelta(minutes=90), "1h30m0s"), (timedelta(seconds=45), "45s"), (timedelta(minutes=5), "5m0s"),
     (timedelta(hours=720), "720h0m0s")],
)  # fmt: skip
def test_format_duration_matches_go(value: timedelta, text: str) -> None:
    assert format_duration(value) == text


@pytest.mark.parametrize("text", ["720h", "1h30m", "30s", "0s", "Never", "1h0m0s"])
def test_karpenter_durations_are_accepted(text: str) -> None:
    assert validate_duration(text) == text


@pytest.mark.parametrize("text", ["1.5h", "250ms", "30d", "never", ""])
def test_karpenter_durations_reject_what_the_crd_pattern_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape('use whole numbers with the units s, m or h, e.g. "720h"')):
        validate_duration(text)


def test_never_is_refused_where_a_finite_duration_is_needed() -> None:
    with pytest.raises(ValueError, match='"Never" is not allowed here'):
        validate_duration("Never", allow_never=False)


@pytest.mark.parametrize(("text", "ok"), [("30m", True), ("8h", True), ("1h30m", True), ("1h30m0s", True),
                                          ("30s", False), ("1h30m15s", False), ("Never", False)])  # fmt: skip
def test_budget_durations_take_minutes_and_hours_only(text: str, ok: bool) -> None:
    if ok:
        assert validate_budget_duration(text) == text
    else:
        with pytest.raises(ValueError, match="use whole hours and/or minutes"):
            validate_budget_duration(text)


class Durations(pydantic.BaseModel):
    any: Duration = "720h"
    finite: FiniteDuration = "1h"
    budget: BudgetDuration = "1h"


def test_duration_types_carry_the_crd_patterns_into_the_json_schema() -> None:
    properties = Durations.model_json_schema()["properties"]
    assert properties["any"]["pattern"] == r"^(([0-9]+(s|m|h))+|Never)$"
    assert properties["finite"]["pattern"] == r"^([0-9]+(s|m|h))+$"
    assert properties["budget"]["pattern"] == r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
