"""Validation problems in Kubernetes terms: which object, which field (`spec.template.spec.requirements[0]
.operator`, wire names), what is wrong and how to fix it, one line each and without pydantic's jargon.

`describe_validation_error` is the one place pydantic's error list is translated; everything that reports
invalid API objects (CLI, NodePool status conditions, events) uses `ValidationProblem` or its one-line form.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

import pydantic
from pydantic_core import ErrorDetails

from apis.values.syntax import FIELD_ERROR

_PREFIXES = ("Value error, ", "Assertion failed, ")
# pydantic's names for validator wrappers and union branches, which are not fields.
_BRANCH = re.compile(r"^(function-(after|before|wrap|plain)|list|dict|set|tuple|union|nullable|json-or-python)\[.*\]$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
MAX_INPUT_REPR = 60


@dataclass(frozen=True)
class ValidationProblem:
    """One problem with one field of one object; `str()` is `<field>: <message>`."""

    kind: str
    name: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message

    def describe(self) -> str:
        """With the object: `NodePool "default": spec.weight: must be at most 100, got 101`."""
        return f'{self.kind} "{self.name}": {self}'


class ApiValidationError(ValueError):
    """An API object is invalid; `problems` lists each problem (never empty)."""

    def __init__(self, problems: Sequence[ValidationProblem]) -> None:
        self.problems = list(problems)
        super().__init__(format_problems(self.problems))


def format_problems(problems: Sequence[ValidationProblem], limit: int = 5) -> str:
    """One line for status conditions and events: `NodePool "a" is invalid: f1: m1; f2: m2 (and 3 more)`."""
    if not problems:
        return ""
    first = problems[0]
    shown = "; ".join(str(p) for p in problems[:limit])
    more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
    return f'{first.kind} "{first.name}" is invalid: {shown}{more}'


def describe_validation_error(
    kind: str, name: str, err: pydantic.ValidationError, model: type[pydantic.BaseModel] | None = None
) -> list[ValidationProblem]:
    """The pydantic error as problems, in the error's order. `model` (the validated class) lets an unknown
    field's message suggest the closest known field."""
    return [_problem(kind, name, details, model) for details in err.errors(include_url=False)]


def field_path(loc: Iterable[int | str]) -> str:
    """pydantic's location as a Kubernetes field path: `spec.requirements[0].key`, `labels[example.com/a]`."""
    out = ""
    parts = [p for p in loc if not (isinstance(p, str) and _BRANCH.match(p))]
    for part in parts:
        if part == "[key]":
            continue
        if isinstance(part, int) or not _IDENTIFIER.match(part):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _problem(kind: str, name: str, details: ErrorDetails, model: type[pydantic.BaseModel] | None) -> ValidationProblem:
    loc = list(details["loc"])
    ctx = details.get("ctx") or {}
    if details["type"] == FIELD_ERROR:
        loc.extend(ctx["field"])
    return ValidationProblem(kind=kind, name=name, field=field_path(loc), message=_message(details, loc, model))


def _message(details: ErrorDetails, loc: list[int | str], model: type[pydantic.BaseModel] | None) -> str:
    kind, ctx, value = details["type"], details.get("ctx") or {}, details.get("input")
    if kind == "missing":
        return "required field is missing; set it"
    if kind == "extra_forbidden":
        return _unknown_field(loc, model)
    if kind == "literal_error":
        allowed = _QUOTED.findall(str(ctx.get("expected", "")))
        return f"unknown value {_short(value)}; use one of {', '.join(allowed)}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"must be {'at least' if kind.endswith('equal') else 'greater than'} {bound}, got {_short(value)}"
    if kind in ("less_than_equal", "less_than"):
        bound = ctx.get("le", ctx.get("lt"))
        return f"must be {'at most' if kind.endswith('equal') else 'less than'} {bound}, got {_short(value)}"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s), got {ctx.get('actual_length')}"
    if kind == "too_long":
        return f"allows at most {ctx.get('max_length')} item(s), got {ctx.get('actual_length')}"
    message = str(details["msg"])
    for prefix in _PREFIXES:
        message = message.removeprefix(prefix)
    if message.startswith("Input should be"):
        message = "expected " + message.removeprefix("Input should be ")
        message = f"{message}, got {_short(value)}"
    return message


def _short(value: Any) -> str:
    if isinstance(value, str):
        text = f'"{value}"'
    elif isinstance(value, dict | list):
        text = type(value).__name__ if len(repr(value)) > MAX_INPUT_REPR else repr(value)
    else:
        text = repr(value)
    return text if len(text) <= MAX_INPUT_REPR else text[: MAX_INPUT_REPR - 3] + "..."


def _unknown_field(loc: list[int | str], model: type[pydantic.BaseModel] | None) -> str:
    field = str(loc[-1]) if loc else ""
    known = _known_fields(model, loc[:-1]) if model is not None else []
    close = difflib.get_close_matches(field, known, n=1)
    if close:
        return f'unknown field "{field}"; did you mean "{close[0]}"?'
    if known:
        return f'unknown field "{field}"; remove it (known fields here: {", ".join(known)})'
    return f'unknown field "{field}"; remove it or fix its spelling'


def _known_fields(model: type[pydantic.BaseModel], path: list[int | str]) -> list[str]:
    """The wire names of the fields of the model found at `path` under `model` (empty when unknown)."""
    current: Any = model
    for part in path:
        current = _unwrap(current)
        if isinstance(part, int) or part == "[key]":
            args = get_args(current)
            current = args[-1] if args else None
            continue
        if not (isinstance(current, type) and issubclass(current, pydantic.BaseModel)):
            return []
        field = next(
            (f for n, f in current.model_fields.items() if part in (n, f.alias)),
            None,
        )
        if field is None:
            return []
        current = field.annotation
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
        return sorted(f.alias or n for n, f in current.model_fields.items())
    return []


def _unwrap(annotation: Any) -> Any:
    """Strip Annotated and Optional (X | None) from an annotation."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation
