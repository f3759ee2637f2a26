"""Label and field selectors, as in ``?labelSelector=`` / ``?fieldSelector=`` and ``LabelSelector``.

``parse_label_selector`` understands ``k``, ``!k``, ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
``k notin (a,b)``, ``k>n`` and ``k<n``; ``parse_field_selector`` understands ``path=v``,
``path==v`` and ``path!=v`` on any dotted path (a missing field compares as ""). Both return a
predicate over a whole object and raise ``ApiError`` 400 naming the bad term.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from devstack.kube.errors import ApiError, bad_request

Predicate = Callable[[Mapping[str, Any]], bool]

_SET_OP = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)\s*$")
_CMP_OP = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s*(?P<op>==|!=|=|<|>)\s*(?P<value>[^\s!=<>(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=<>(),]+)\s*$")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside ``( )``."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def _label_term(term: str) -> Callable[[Mapping[str, str]], bool]:
    if m := _SET_OP.match(term):
        key, values = m["key"], frozenset(v.strip() for v in m["values"].split(",") if v.strip())
        if m["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _CMP_OP.match(term):
        key, op, value = m["key"], m["op"], m["value"]
        if op in ("=", "=="):
            return lambda labels: labels.get(key) == value
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return _numeric_term(key, op, value, term)
    if m := _EXISTS.match(term):
        key = m["key"]
        if m["neg"]:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: labelSelector term {term.strip()!r} is not a valid selector")


def _numeric_term(key: str, op: str, value: str, term: str) -> Callable[[Mapping[str, str]], bool]:
    try:
        bound = int(value)
    except ValueError:
        raise bad_request(f"labelSelector term {term.strip()!r}: {op} needs an integer value") from None

    def check(labels: Mapping[str, str]) -> bool:
        try:
            actual = int(labels[key])
        except (KeyError, ValueError):
            return False
        return actual > bound if op == ">" else actual < bound

    return check


def parse_label_selector(text: str | None) -> Predicate | None:
    """A predicate for a ``labelSelector`` query value; None when it selects everything."""
    if not text or not text.strip():
        return None
    checks = [_label_term(t) for t in _split_terms(text)]
    return lambda obj: all(check(_labels(obj)) for check in checks)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted path in an object, "" when any part is missing."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return ""
        node = node[part]
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts = re.split(rf"(?<!\\){re.escape(sep)}", text)
    return [p.replace("\\" + sep, sep) for p in parts]


def parse_field_selector(text: str | None) -> Predicate | None:
    """A predicate for a ``fieldSelector`` query value; None when it selects everything."""
    if not text or not text.strip():
        return None
    checks: list[tuple[str, bool, str]] = []
    for term in _split_unescaped(text, ","):
        if not term.strip():
            continue
        m = re.match(r"^\s*([A-Za-z0-9_.\-/]+)\s*(==|!=|=)(.*)$", term)
        if not m:
            raise bad_request(f'invalid selector: fieldSelector term {term!r}: use "field=value" or "field!=value"')
        checks.append((m[1], m[2] == "!=", m[3].strip()))

    def predicate(obj: Mapping[str, Any]) -> bool:
        return all(
            (field_value(obj, path) != value) if negate else (field_value(obj, path) == value)
            for path, negate, value in checks
        )

    return predicate


def _expression(expr: Mapping[str, Any]) -> Callable[[Mapping[str, str]], bool]:
    key, op = expr.get("key"), expr.get("operator")
    values = frozenset(expr.get("values") or ())
    if not isinstance(key, str) or op not in ("In", "NotIn", "Exists", "DoesNotExist"):
        raise ApiError(
            422,
            "Invalid",
            f"selector.matchExpressions: invalid expression {dict(expr)!r}: "
            "needs a string key and operator In, NotIn, Exists or DoesNotExist",
        )
    if op == "In":
        return lambda labels: labels.get(key) in values
    if op == "NotIn":
        return lambda labels: labels.get(key) not in values
    if op == "Exists":
        return lambda labels: key in labels
    return lambda labels: key not in labels


def label_selector_matcher(selector: Mapping[str, Any] | None) -> Predicate:
    """A predicate for a ``LabelSelector`` object (matchLabels + matchExpressions).

    A missing (None) selector matches nothing and an empty one matches everything, as for
    policy/v1 PodDisruptionBudgets.
    """
    if selector is None:
        return lambda obj: False
    match_labels = dict(selector.get("matchLabels") or {})
    expressions = [_expression(e) for e in selector.get("matchExpressions") or ()]

    def predicate(obj: Mapping[str, Any]) -> bool:
        labels = _labels(obj)
        return all(labels.get(k) == v for k, v in match_labels.items()) and all(e(labels) for e in expressions)

    return predicate
