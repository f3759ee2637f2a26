"""API errors rendered as the ``Status`` bodies a real kube-apiserver sends.

Every failure inside the emulator is raised as :class:`ApiError`; the server renders it once,
at the HTTP edge, so clients (the official Python client, client-go in kubectl) see the same
``reason``/``code``/``details`` they would see from a real cluster.
"""

from __future__ import annotations

from typing import Any

from devstack.kube.catalog import ServedResource


class ApiError(Exception):
    """A request the API refuses; ``status()`` is the JSON body to send with ``code``."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def qualified(res: ServedResource) -> str:
    """``pods`` for core kinds, ``nodeclaims.karpenter.sh`` otherwise (as in real messages)."""
    return f"{res.plural}.{res.group}" if res.group else res.plural


def _details(res: ServedResource, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": res.plural}
    if res.group:
        details["group"] = res.group
    return details


def not_found(res: ServedResource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(res)} "{name}" not found', _details(res, name))


def already_exists(res: ServedResource, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{qualified(res)} "{name}" already exists', _details(res, name))


def conflict(res: ServedResource, name: str, why: str | None = None) -> ApiError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(
        409, "Conflict", f'Operation cannot be fulfilled on {qualified(res)} "{name}": {why}', _details(res, name)
    )


def invalid(res: ServedResource, name: str, field: str, problem: str) -> ApiError:
    """422 Invalid naming the offending field, like apiserver validation errors."""
    details = _details(res, name)
    details["kind"] = res.kind
    details["causes"] = [{"reason": "FieldValueInvalid", "message": problem, "field": field}]
    return ApiError(422, "Invalid", f'{res.kind} "{name}" is invalid: {field}: {problem}', details)


def invalid_fields(res: ServedResource, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid listing several field errors, each (field path, ``Invalid value: "<type>": <message>``),
    worded as kube-apiserver's validation of custom resources: ``NodePool.karpenter.sh "x" is invalid:
    spec.weight: Invalid value: "integer": ...``; several causes are joined in brackets."""
    details = _details(res, name)
    details["kind"] = res.kind
    details["causes"] = [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]
    listed = [f"{f}: {m}" for f, m in causes]
    summary = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    group_kind = f"{res.kind}.{res.group}" if res.group else res.kind
    return ApiError(422, "Invalid", f'{group_kind} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def unsupported_media_type(content_type: str, res: ServedResource) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types for {qualified(res)} "
        f'do not include "{content_type}"',
    )


def method_not_allowed(method: str, what: str) -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method} {what})"
    )


def gone(requested: int, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def endpoint_not_found(path: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f"the server could not find the requested resource ({path})",
        {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]},
    )
