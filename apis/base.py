"""The base of every API model: Kubernetes field names (camelCase) on the wire, snake_case in Python."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class KubeModel(BaseModel):
    """Strict model: unknown fields are errors (so a typo names its field), camelCase aliases on the wire.

    `model_dump()` emits the Kubernetes names; both the alias and the Python name validate.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
    )

    def to_kube(self) -> dict[str, Any]:
        """The object as the Kubernetes API would serve it: aliases, no unset optional fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class OpenKubeModel(KubeModel):
    """A model that keeps fields it does not know (for metadata and other shared Kubernetes types)."""

    model_config = ConfigDict(extra="allow")
