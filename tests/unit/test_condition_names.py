"""NodeClaim condition types are defined once, in apis.nodeclaim: the workflows, the activities and the worker
use its constants, never the name written as a string.

The check parses every Python file of workflows/, activities/ and workers/ and looks where a condition type is named:
a subscript (`conditions["Drifted"]`), a dict key, an argument of a call (`_condition(claim, "Launched")`,
`conditions.pop("Drifted")`), a comparison (`c.get("type") == "Expired"`) and a constant assigned at any
level (`DISRUPTION_REASON = "DisruptionReason"`, a second definition). A string equal to one of
apis.nodeclaim.CONDITION_TYPES in any of those places fails; elsewhere (a log message, a docstring) it is
prose, not a name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from apis import nodeclaim

REPO = Path(__file__).resolve().parents[2]
CHECKED = ["workflows", "activities", "workers"]
NAMES = frozenset(nodeclaim.CONDITION_TYPES)


def _named_places(tree: ast.AST) -> Iterator[ast.expr]:
    """The expressions of `tree` that name something: subscripts, dict keys, call arguments, the operands
    of comparisons and the values of assignments."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            yield node.slice
        elif isinstance(node, ast.Dict):
            yield from (key for key in node.keys if key is not None)
        elif isinstance(node, ast.Call):
            yield from node.args
            yield from (keyword.value for keyword in node.keywords)
        elif isinstance(node, ast.Compare):
            yield node.left
            yield from node.comparators
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            yield node.value


def violations(source: str) -> list[str]:
    """Where `source` writes a NodeClaim condition type as a string."""
    return [
        f"{place.lineno}: {place.value!r}"
        for place in _named_places(ast.parse(source))
        if isinstance(place, ast.Constant) and isinstance(place.value, str) and place.value in NAMES
    ]


def _files() -> Iterator[Path]:
    for folder in CHECKED:
        for path in sorted((REPO / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


def test_no_nodeclaim_condition_type_is_a_string_in_workflows_or_activities() -> None:
    found = [
        f"{path.relative_to(REPO)}:{where}"
        for path in _files()
        for where in violations(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "use the constants of apis.nodeclaim:\n" + "\n".join(found)


def test_the_condition_types_include_readys_dependents() -> None:
    assert set(nodeclaim.READY_DEPENDENTS) <= NAMES
    assert len(NAMES) == len(nodeclaim.CONDITION_TYPES)


@pytest.mark.parametrize(
    "source",
    [
        'self.state.conditions["Expired"] = "True"',
        'self.state.conditions.pop("Drifted", None)',
        '_condition(claim, "Registered")',
        'set_condition(conditions, type_="Consolidatable")',
        '{"Launched": "True"}',
        'c.get("type") == "Initialized"',
        'DISRUPTION_REASON = "DisruptionReason"',
    ],
)
def test_the_check_finds_a_condition_type_written_as_a_string(source: str) -> None:
    assert violations(source) != []


@pytest.mark.parametrize(
    "source",
    [
        'self.state.conditions[EXPIRED] = "True"',
        'log.info("node %s Drifted", name)',  # prose, not a name
        'c.get("type") == "Ready"',  # a Node condition, apis.meta.READY
        'self._set_conditions(inp, (DRAINED, "False", "Draining", message))',
    ],
)
def test_the_check_ignores_strings_that_are_not_condition_types(source: str) -> None:
    assert violations(source) == []
