"""pydantic errors become one-line problems with Kubernetes field paths and no pydantic jargon."""

from __future__ import annotations

import pydantic
import pytest

from apis.errors import ValidationProblem, describe_validation_error, field_path, format_problems
from apis.nodepool import NodePool
from tests.unit.apis.builders import nodepool_doc, with_value


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (("spec", "template", "spec", "requirements", 0, "operator"), "spec.template.spec.requirements[0].operator"),
        (("metadata", "labels", "example.com/team", "[key]"), "metadata.labels[example.com/team]"),
        (("spec", "limits", "cpu"), "spec.limits.cpu"),
        (("spec", "taints", 1, "function-after[validate_taint_key(), str]"), "spec.taints[1]"),
        ((), ""),
    ],
)  # fmt: skip
def test_field_path_uses_kubernetes_notation(loc: tuple[int | str, ...], path: str) -> None:
    assert field_path(loc) == path


def problems_for(doc: dict[str, object]) -> list[ValidationProblem]:
    with pytest.raises(pydantic.ValidationError) as raised:
        NodePool.model_validate(doc)
    return describe_validation_error("NodePool", "default", raised.value, NodePool)


def test_problems_use_wire_names_and_carry_no_pydantic_urls_or_prefixes() -> None:
    doc = with_value(nodepool_doc(), "spec.template.spec.expireAfter", "forever")
    (problem,) = problems_for(doc)
    assert problem.field == "spec.template.spec.expireAfter"
    assert "pydantic" not in problem.message and "Value error" not in problem.message
    assert "\n" not in str(problem)


def test_wrong_types_say_what_was_expected_and_got() -> None:
    (problem,) = problems_for(with_value(nodepool_doc(), "spec.weight", "heavy"))
    assert problem.field == "spec.weight"
    assert problem.message.startswith("expected a valid integer") and 'got "heavy"' in problem.message


def test_unknown_field_without_a_close_match_lists_the_known_ones() -> None:
    (problem,) = problems_for(with_value(nodepool_doc(), "spec.template.spec.zzz", 1))
    assert problem.message.startswith('unknown field "zzz"; remove it (known fields here: expireAfter, nodeClassRef')


def test_format_problems_is_one_line_and_bounded() -> None:
    problems = [ValidationProblem("NodePool", "a", f"spec.f{i}", "bad") for i in range(7)]
    line = format_problems(problems, limit=2)
    assert line == 'NodePool "a" is invalid: spec.f0: bad; spec.f1: bad (and 5 more)'
    assert format_problems([]) == ""


def test_an_unknown_operator_reads_exactly_as_documented() -> None:
    bad = {"key": "kubernetes.io/arch", "operator": "Equals", "values": ["amd64"]}
    (problem,) = problems_for(with_value(nodepool_doc(), "spec.template.spec.requirements.0", bad))
    assert str(problem) == (
        'spec.template.spec.requirements[0].operator: unknown operator "Equals"; '
        "use one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte"
    )
