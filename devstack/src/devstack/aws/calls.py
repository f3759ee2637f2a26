"""A record of the AWS operations clients call on the local moto server, for permission checks.

`CallRecorder` wraps the server's WSGI app. For every signed AWS request it appends one line
`<app id> <service>:<Action>` (e.g. `nodeflow ec2:CreateFleet`) to a file of its own in a directory,
once per distinct line per process. The service is the SigV4 credential scope's (`Authorization:
AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/<service>/aws4_request`), the action the request's
(`Action=` in the query or form body, or the `X-Amz-Target` header). The app id is the `app/<id>`
token boto3 puts in the User-Agent when a client's config sets `user_agent_appid`, `-` without one: it
tells the calls of the product under test from those of the seed, the simulated kubelet and the tests.

`MotoServer` records when given a directory, or when the environment variable `DEVSTACK_AWS_CALL_LOG`
names one (children of a process that sets it inherit it: the stack's services process, for one).
`read_calls(directory)` returns the union of the lines of all files there.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from devstack.aws.request import WSGIApp, request_action

CALL_LOG_ENV = "DEVSTACK_AWS_CALL_LOG"
_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/[^/]+/([^/]+)/aws4_request")
_APP_ID = re.compile(r"(?:^|\s)app/(\S+)")


def call_log_from_env() -> Path | None:
    """The directory `DEVSTACK_AWS_CALL_LOG` names, None when it is unset or empty."""
    value = os.environ.get(CALL_LOG_ENV, "")
    return Path(value) if value else None


def operation(environ: dict[str, Any]) -> str | None:
    """`service:Action` of a signed AWS request, None for anything else (moto-api, the fault endpoint)."""
    scope = _SCOPE.search(str(environ.get("HTTP_AUTHORIZATION", "")))
    if scope is None:
        return None
    service = scope.group(1)
    action, _ = request_action(environ)
    if not action:
        action = _rest_action(service, str(environ.get("REQUEST_METHOD", "")), str(environ.get("PATH_INFO", "")))
    return f"{service}:{action}" if action else None


# REST-protocol operations carry no action name: (service, method, path pattern) -> operation. Only the
# ones nodeflow calls; another REST call is not recorded (and the static scan of boto3 calls still
# checks it against the policy).
_REST_OPERATIONS = ((("eks", "GET", re.compile(r"^/clusters/[^/]+$")), "DescribeCluster"),)


def _rest_action(service: str, method: str, path: str) -> str | None:
    for (name, verb, pattern), action in _REST_OPERATIONS:
        if name == service and verb == method and pattern.match(path):
            return action
    return None


def app_id(user_agent: str) -> str:
    """The `app/<id>` token of a User-Agent, "-" when there is none."""
    found = _APP_ID.search(user_agent)
    return found.group(1) if found else "-"


def read_calls(directory: Path) -> set[str]:
    """Every line recorded in `directory` (all processes), without duplicates."""
    return {line for f in sorted(directory.glob("calls-*.log")) for line in f.read_text().splitlines() if line}


class CallRecorder:
    """Wraps a WSGI app; appends each new `<app id> <service>:<Action>` line to its own file in
    `directory` (created if missing). Never changes a request or its answer."""

    def __init__(self, app: WSGIApp, directory: Path) -> None:
        self._app = app
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"calls-{os.getpid()}-{uuid.uuid4().hex[:8]}.log"
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        op = operation(environ)
        if op is not None:
            self._record(f"{app_id(str(environ.get('HTTP_USER_AGENT', '')))} {op}")
        return self._app(environ, start_response)

    def _record(self, line: str) -> None:
        with self._lock:
            if line in self._seen:
                return
            self._seen.add(line)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
