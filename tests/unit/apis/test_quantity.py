"""Kubernetes quantities: exact parsing, canonical units, formatting, and the pydantic field type."""

from __future__ import annotations

import re
from fractions import Fraction

import pydantic
import pytest

from apis.values.quantity import (
    Quantity,
    add,
    fits,
    format_resource_list,
    format_units,
    parse_quantity,
    subtract,
    to_resource_list,
    to_units,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", Fraction(2)),
        ("500m", Fraction(1, 2)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("1e3", Fraction(1000)),
        ("2k", Fraction(2000)),
        ("100Mi", Fraction(100 * 2**20)),
        (".5", Fraction(1, 2)),
        (3, Fraction(3)),
        ("+1", Fraction(1)),
    ],
)
def test_parse_quantity_is_exact(text: str | int, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.5.5", "10 Gi", "1GB", "Gi"])
def test_parse_quantity_rejects_malformed_text_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape('use a number with an optional suffix, e.g. "500m", "2Gi"')):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("resource", "text", "units"),
    [("cpu", "500m", 500), ("cpu", "2", 2000), ("cpu", "0.0001", 1), ("memory", "1Gi", 2**30), ("pods", "110", 110)],
)
def test_to_units_uses_millicores_for_cpu_and_rounds_up(resource: str, text: str, units: int) -> None:
    assert to_units(resource, text) == units


@pytest.mark.parametrize(
    ("resource", "units", "text"),
    [("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("memory", 2**30, "1Gi"), ("memory", 640 * 2**20, "640Mi"),
     ("memory", 1000, "1000"), ("ephemeral-storage", 2**10, "1Ki"), ("pods", 29, "29"), ("memory", 0, "0")],
)  # fmt: skip
def test_format_units_prefers_exact_binary_suffixes(resource: str, units: int, text: str) -> None:
    assert format_units(resource, units) == text


def test_resource_list_arithmetic() -> None:
    capacity = to_resource_list({"cpu": "2", "memory": "8Gi", "pods": 29})
    requests = to_resource_list({"cpu": "1500m", "memory": "1Gi"})
    left = subtract(capacity, requests)
    assert left == {"cpu": 500, "memory": 7 * 2**30, "pods": 29}
    assert add(left, requests) == capacity
    assert fits(requests, capacity) and not fits({"cpu": 2001}, capacity)
    assert fits({"nvidia.com/gpu": 0}, capacity) and not fits({"nvidia.com/gpu": 1}, capacity)
    assert list(format_resource_list(capacity)) == ["cpu", "memory", "pods"]


class Limits(pydantic.BaseModel):
    cpu: Quantity


def test_quantity_field_accepts_integers_and_keeps_strings() -> None:
    assert Limits.model_validate({"cpu": 100}).cpu == "100"
    assert Limits.model_validate({"cpu": "500m"}).cpu == "500m"


@pytest.mark.parametrize("value", [True, None, [1], "ten"])
def test_quantity_field_rejects_non_quantities(value: object) -> None:
    with pytest.raises(pydantic.ValidationError):
        Limits.model_validate({"cpu": value})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1e30000000", "the exponent must be between -40 and 40"),
        ("1e-30000000", "the exponent must be between -40 and 40"),
        ("1e" + "9" * 5000, "the exponent must be between -40 and 40"),
        ("1" + "0" * 60, "has too many digits"),
        ("1e19", "its magnitude must be below 2^63"),
        ("8Ei", "its magnitude must be below 2^63"),
        (1e300, "its magnitude must be below 2^63"),
        (10**30, "its magnitude must be below 2^63"),
    ],
)
def test_parse_quantity_rejects_absurd_magnitudes_without_computing_them(text: str | float, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["7Ei", "9e18", "1e-9", "0.000000001", "1e+3", 2**62])
def test_parse_quantity_accepts_everything_below_the_bounds(text: str | int) -> None:
    assert parse_quantity(text) >= 0


def test_an_absurd_quantity_field_is_a_validation_error_naming_the_field() -> None:
    class Limits(pydantic.BaseModel):
        limits: dict[str, Quantity]

    with pytest.raises(pydantic.ValidationError, match=r"limits\.cpu[\s\S]*out of range"):
        Limits.model_validate({"limits": {"cpu": "1e30000000"}})
