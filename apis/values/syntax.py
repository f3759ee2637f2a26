"""String syntax shared by the API models: Kubernetes label keys and values, taint keys and values, and a
marker that adds keywords (pattern, default, ...) to a type's JSON schema without changing its validation.

The checks return a problem sentence (naming the fix) or None, so validators can raise it and other
code can reuse it without exceptions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

# The patterns Karpenter's CRDs use (taint keys and requirement keys share the qualified-name pattern).
QUALIFIED_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(LABEL_VALUE_PATTERN)
MAX_NAME_LENGTH = 63
MAX_PREFIX_LENGTH = 253


def qualified_name_problem(key: str, what: str = "label key") -> str | None:
    """Why `key` is not a qualified name (`[prefix/]name`, as Kubernetes label and taint keys), or None."""
    prefix, _, name = key.rpartition("/")
    hint = 'use an optional DNS-subdomain prefix and a name, e.g. "example.com/team" or "team"'
    if "/" in key and not prefix:
        return f'invalid {what} "{key}": the prefix before "/" is empty; {hint}'
    if prefix and (len(prefix) > MAX_PREFIX_LENGTH or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return (
            f'invalid {what} "{key}": prefix "{prefix}" must be a lowercase DNS subdomain of at most '
            f"{MAX_PREFIX_LENGTH} characters; {hint}"
        )
    if not name or len(name) > MAX_NAME_LENGTH or not _NAME.fullmatch(name):
        return (
            f'invalid {what} "{key}": the name part must be 1-{MAX_NAME_LENGTH} characters of letters, digits, '
            f"'-', '_' or '.', starting and ending with a letter or digit; {hint}"
        )
    return None


def label_value_problem(value: str, what: str = "label value") -> str | None:
    """Why `value` is not a valid label value (at most 63 characters, alphanumeric ends), or None."""
    if len(value) > MAX_NAME_LENGTH or not _LABEL_VALUE.fullmatch(value):
        return (
            f"invalid {what} \"{value}\": use at most {MAX_NAME_LENGTH} letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit (or an empty value)"
        )
    return None


@dataclass(frozen=True)
class SchemaExtra:
    """Annotated marker: merge these keywords into the type's JSON schema (used to keep the CRD's
    patterns, defaults and int-or-string markers beside the type whose validator enforces them)."""

    keywords: dict[str, Any] = field(default_factory=dict)
    replace: bool = False

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.keywords)))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        if self.replace:
            return dict(self.keywords)
        out = handler(schema)
        out.update(self.keywords)
        return out


FIELD_ERROR = "nodeflow_field"


def field_error(field_name: str, message: str, *index: int | str) -> PydanticCustomError:
    """An error for a model validator to raise about one of the model's own fields (by its wire name):
    `describe_validation_error` reports it at `<model path>.<field_name>[<index>...]` rather than at the model."""
    return PydanticCustomError(FIELD_ERROR, "{message}", {"message": message, "field": [field_name, *index]})
