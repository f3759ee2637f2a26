"""CRD validation rules (``x-kubernetes-validations``) on custom resources, as kube-apiserver runs them.

``violations(schema, new, old)`` walks the object with its version's ``openAPIV3Schema`` and evaluates
each rule (``devstack.kube.cel``) on the value at its node, as the API server does on create and update:

- a rule runs only where the value exists and has the schema's type (absent optional fields are not
  checked; a mistyped value is left to schema validation, which the emulator does not do);
- a transition rule (one that reads ``oldSelf``) runs only on update, where the old object has a value
  at the same place: object properties and map values correlate by name; array items do not (Karpenter's
  lists are atomic), so rules under ``items`` never see ``oldSelf``;
- on update, a subtree equal to the old one is not checked again (validation ratcheting, on by default
  since Kubernetes 1.30): status and metadata writes skip the spec, and an object stored before its CRD
  rules existed can still be updated elsewhere. (The API server still runs transition rules there; the
  ones CRDs use, ``self == oldSelf`` and the like, hold on equal values.)

Only ``rule`` and ``message`` are read: ``messageExpression``, ``reason``, ``fieldPath`` and
``optionalOldSelf`` are ignored (Karpenter's rules use none of them). Each failure is a
:class:`Violation` at its field path (``spec.disruption.budgets``,
``spec.template.spec.requirements[0].key``, map values as ``spec.tags[key]``), in walk order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from devstack.kube.cel import ABSENT, check

Schema = dict[str, Any]
_OLD_SELF = re.compile(r"\boldSelf\b")
_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


@dataclass(frozen=True)
class Violation:
    """A rule that failed: where (field path), the schema type there, and the message to show."""

    field: str
    type: str
    message: str

    def detail(self) -> str:
        """The cause's message as kube-apiserver writes it: ``Invalid value: "object": <message>``."""
        return f'Invalid value: "{self.type}": {self.message}'


def is_transition_rule(rule: str) -> bool:
    """Whether the rule reads ``oldSelf`` (and so runs on updates only)."""
    return bool(_OLD_SELF.search(rule))


def violations(schema: Schema | None, new: Any, old: Any = ABSENT) -> list[Violation]:
    """Every failed rule of `schema` on `new` (`old`: the stored object on update, ABSENT on create)."""
    found: list[Violation] = []
    if schema:
        _walk(schema, new, old, "", found)
    return found


def _type_matches(schema: Schema, value: Any) -> bool:
    expected = _TYPES.get(schema.get("type", ""))
    if expected is None:
        return value is not None
    if isinstance(value, bool) and expected is not bool:
        return False
    return isinstance(value, expected)


def _walk(schema: Schema, value: Any, old: Any, path: str, found: list[Violation]) -> None:
    if not _type_matches(schema, value):
        return
    if old is not ABSENT and value == old:
        return  # ratcheting: unchanged
    rules = schema.get("x-kubernetes-validations")
    for entry in rules if isinstance(rules, list) else []:
        rule = entry.get("rule") if isinstance(entry, dict) else None
        if not isinstance(rule, str) or (is_transition_rule(rule) and old is ABSENT):
            continue
        message = entry.get("message") if isinstance(entry.get("message"), str) else None
        problem = check(rule, message, value, old if is_transition_rule(rule) else ABSENT)
        if problem is not None:
            found.append(Violation(path or "<root>", str(schema.get("type", "object")), problem))
    _walk_children(schema, value, old, path, found)


def _walk_children(schema: Schema, value: Any, old: Any, path: str, found: list[Violation]) -> None:
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key) if isinstance(properties, dict) else None
            if sub is None and isinstance(extra, dict):
                sub, child = extra, f"{path}[{key}]"
            else:
                child = f"{path}.{key}" if path else key
            if isinstance(sub, dict):
                previous = old.get(key, ABSENT) if isinstance(old, dict) else ABSENT
                _walk(sub, item, previous, child, found)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _walk(schema["items"], item, ABSENT, f"{path}[{index}]", found)
