"""WSGI layer in front of moto: the /_nodeflow/faults control endpoint and injected throttling / 5xx."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from devstack.aws.faults import FAULTS_PATH, FaultStore
from devstack.aws.patches import set_request_faults
from devstack.aws.request import WSGIApp, request_action

_ERRORS = {
    "throttle": ("503 Service Unavailable", "RequestLimitExceeded", "Request limit exceeded."),
    "server_error": ("500 Internal Server Error", "InternalError", "An internal error has occurred"),
    "access_denied": ("403 Forbidden", "UnauthorizedOperation", "You are not authorized to perform this operation."),
}
_JSON_CODES = {"throttle": "ThrottlingException", "access_denied": "AccessDeniedException"}


def _error_response(kind: str, json_protocol: bool, start_response: Callable[..., Any]) -> list[bytes]:
    status, code, message = _ERRORS[kind]
    if json_protocol:
        body = json.dumps({"__type": _JSON_CODES.get(kind, code), "message": message})
        start_response(
            "400 Bad Request" if kind == "access_denied" else status, [("Content-Type", "application/x-amz-json-1.1")]
        )
        return [body.encode()]
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors>"
        f"<RequestID>{uuid.uuid4()}</RequestID></Response>"
    )
    start_response(status, [("Content-Type", "text/xml;charset=UTF-8")])
    return [xml.encode()]


class FaultInjectingApp:
    """Wraps moto's WSGI app with the fault endpoint and the per-request fault store."""

    def __init__(self, app: WSGIApp, faults: FaultStore) -> None:
        self._app = app
        self._faults = faults

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") == FAULTS_PATH:
            return self._control(environ, start_response)
        action, json_protocol = request_action(environ)
        kind = self._faults.take(action) if action else None
        if kind is not None:
            return _error_response(kind, json_protocol, start_response)
        set_request_faults(self._faults)
        try:
            return self._app(environ, start_response)
        finally:
            set_request_faults(None)

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            if method == "POST":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                body = json.loads(environ["wsgi.input"].read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                self._faults.add(body)
            elif method == "DELETE":
                self._faults.clear()
            elif method != "GET":
                raise ValueError(f"method {method} not allowed: use GET, POST or DELETE")
        except ValueError as error:
            start_response("400 Bad Request", [("Content-Type", "application/json")])
            return [json.dumps({"error": str(error)}).encode()]
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(self._faults.snapshot()).encode()]
