"""The requirements algebra: operators, intersection, label matching."""

from __future__ import annotations

import pytest

from scheduling.constraints.requirements import Req, Requirements, parse_expressions


@pytest.mark.parametrize(
    ("operator", "values", "label", "allowed"),
    [
        ("In", ["a", "b"], "a", True),
        ("In", ["a", "b"], "c", False),
        ("In", ["a"], None, False),
        ("NotIn", ["a"], "a", False),
        ("NotIn", ["a"], "b", True),
        ("NotIn", ["a"], None, True),
        ("Exists", [], "x", True),
        ("Exists", [], None, False),
        ("DoesNotExist", [], None, True),
        ("DoesNotExist", [], "x", False),
        ("Gt", ["4"], "5", True),
        ("Gt", ["4"], "4", False),
        ("Gt", ["4"], "abc", False),
        ("Gte", ["4"], "4", True),
        ("Lt", ["4"], "3", True),
        ("Lt", ["4"], "4", False),
        ("Lte", ["4"], "4", True),
        ("Lte", ["4"], None, False),
    ],
)
def test_operator_semantics(operator: str, values: list[str], label: str | None, allowed: bool) -> None:
    assert Req.from_operator(operator, values).allows(label) is allowed


@pytest.mark.parametrize(
    ("a", "b", "empty"),
    [
        (("In", ["a", "b"]), ("In", ["b", "c"]), False),
        (("In", ["a"]), ("In", ["b"]), True),
        (("In", ["a"]), ("NotIn", ["a"]), True),
        (("NotIn", ["a"]), ("NotIn", ["b"]), False),
        (("Exists", []), ("DoesNotExist", []), True),
        (("NotIn", ["a"]), ("DoesNotExist", []), False),
        (("Gt", ["2"]), ("Lt", ["3"]), True),
        (("Gt", ["2"]), ("Lt", ["4"]), False),
        (("In", ["1", "5"]), ("Gt", ["2"]), False),
        (("In", ["1", "2"]), ("Gt", ["2"]), True),
    ],
)
def test_intersection(a: tuple[str, list[str]], b: tuple[str, list[str]], empty: bool) -> None:
    assert (Req.from_operator(*a) & Req.from_operator(*b)).is_empty() is empty


def test_round_trip_to_api_keeps_meaning() -> None:
    reqs = parse_expressions(
        [
            {"key": "k", "operator": "In", "values": ["b", "a"]},
            {"key": "n", "operator": "Gt", "values": ["3"]},
            {"key": "x", "operator": "DoesNotExist"},
        ],
        "test",
    )
    api = [r.model_dump(by_alias=True) for r in reqs.to_api()]
    assert api[0]["values"] == ["a", "b"]
    assert parse_expressions(api, "again") == reqs


def test_deprecated_keys_are_normalised() -> None:
    reqs = parse_expressions(
        [{"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["z"]}], "t"
    )
    assert list(reqs) == ["topology.kubernetes.io/zone"]


def test_bad_operator_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"where\[0\] \(k\): unknown operator"):
        parse_expressions([{"key": "k", "operator": "Is", "values": ["a"]}], "where")


def test_requirements_are_hashable_and_order_independent() -> None:
    a = Requirements({"x": Req.from_operator("In", ["1"]), "y": Req.from_operator("Exists", [])})
    b = Requirements({"y": Req.from_operator("Exists", []), "x": Req.from_operator("In", ["1"])})
    assert a == b and hash(a) == hash(b)
