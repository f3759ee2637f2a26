"""Injected Kubernetes API faults for the local stack: the rules the emulator checks, the HTTP control
endpoint that sets them, and a client for it (the counterpart of ``devstack.aws.faults`` for moto).

Faults are set at run time over HTTP on the emulator's own port::

    POST   /_nodeflow/faults  {"rules": [{"method": "PATCH", "path": "/nodeclaims/[^/]+/status$",
                                          "status": 503, "count": 3}],
                               "drop_watches": true}
    GET    /_nodeflow/faults  -> {"rules": [...the rules with counts left...]}
    DELETE /_nodeflow/faults  -> clears every rule

A rule answers the next ``count`` requests whose method equals ``method`` (``"*"`` = any) and whose
URL path matches the regular expression ``path`` (``re.search``) with ``status`` and a Kubernetes
``Status`` body. ``count`` ``-1`` means "until cleared". Rules are checked before the emulator
handles the request, so a refused request changes no state. The first matching rule with a count
left is consumed. ``drop_watches`` ends every live watch stream at once (clients must re-watch).
"""

from __future__ import annotations

import json
import re
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devstack.control import send_json

FAULTS_PATH = "/_nodeflow/faults"
UNTIL_CLEARED = -1
METHODS = ("*", "GET", "POST", "PUT", "PATCH", "DELETE")

# Status reasons the real API server sends with these codes.
REASONS = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass
class FaultRule:
    """One rule; ``remaining`` counts down (``UNTIL_CLEARED`` never does)."""

    method: str
    path: re.Pattern[str]
    status: int
    remaining: int

    def matches(self, method: str, path: str) -> bool:
        return self.remaining != 0 and self.method in ("*", method) and self.path.search(path) is not None

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path.pattern, "status": self.status, "count": self.remaining}


def parse_rule(index: int, item: Any) -> FaultRule:
    """A rule from its JSON form. Raises ValueError naming the field (``rules[i].path``) and the fix."""
    where = f"rules[{index}]"
    if not isinstance(item, dict):
        raise ValueError(f"{where} must be an object with method, path, status and count, got {item!r}")
    unknown = sorted(set(item) - {"method", "path", "status", "count"})
    if unknown:
        raise ValueError(f"{where} has unknown fields {unknown}: use method, path, status and count")
    method = str(item.get("method", "*")).upper()
    if method not in METHODS:
        raise ValueError(f"{where}.method must be one of {list(METHODS)}, got {item.get('method')!r}")
    path = item.get("path")
    if not isinstance(path, str) or not path:
        raise ValueError(f'{where}.path must be a regular expression over the URL path, e.g. "/api/v1/nodes"')
    try:
        pattern = re.compile(path)
    except re.error as exc:
        raise ValueError(f"{where}.path is not a valid regular expression ({exc}): {path!r}") from exc
    status = item.get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
        raise ValueError(f"{where}.status must be an HTTP error code between 400 and 599, got {status!r}")
    count = item.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < UNTIL_CLEARED or count == 0:
        raise ValueError(f"{where}.count must be a positive number of requests, or -1 for until cleared")
    return FaultRule(method, pattern, status, count)


def refusal(status: int, method: str, path: str) -> dict[str, Any]:
    """The ``Status`` body of an injected failure."""
    reason = REASONS.get(status, "InternalError" if status >= 500 else "BadRequest")
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"injected fault: {method} {path} refused with {status}",
        "reason": reason,
        "details": {"causes": [{"reason": "InjectedFault", "message": "set through /_nodeflow/faults"}]},
        "code": status,
    }


class KubeFaults:
    """The rules of one emulator. Thread-safe; rules are kept and checked in the order they were added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []

    def add(self, rules: list[FaultRule]) -> None:
        with self._lock:
            self._rules.extend(rules)

    def take(self, method: str, path: str) -> FaultRule | None:
        """The first rule matching this request, with one use consumed; None when none matches."""
        with self._lock:
            for rule in self._rules:
                if rule.matches(method, path):
                    if rule.remaining > 0:
                        rule.remaining -= 1
                    return rule
        return None

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [rule.as_dict() for rule in self._rules if rule.remaining != 0]

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()


def parse_body(body: Any) -> tuple[list[FaultRule], bool]:
    """The rules and the ``drop_watches`` flag of a POST body. Raises ValueError naming the bad field."""
    if not isinstance(body, dict):
        raise ValueError('the body must be a JSON object: {"rules": [...], "drop_watches": true}')
    unknown = sorted(set(body) - {"rules", "drop_watches"})
    if unknown:
        raise ValueError(f"unknown fault fields {unknown}: use rules or drop_watches")
    items = body.get("rules", [])
    if not isinstance(items, list):
        raise ValueError('"rules" must be a list of {method, path, status, count} objects')
    drop = body.get("drop_watches", False)
    if not isinstance(drop, bool):
        raise ValueError('"drop_watches" must be true or false')
    return [parse_rule(i, item) for i, item in enumerate(items)], drop


def control(faults: KubeFaults, method: str, raw_body: bytes, drop_watches: Callable[[], int]) -> tuple[int, Any]:
    """Serve one request to ``FAULTS_PATH``: (HTTP status, JSON body). Bad input is a 400 naming the field."""
    if method == "GET":
        return 200, {"rules": faults.snapshot()}
    if method == "DELETE":
        faults.clear()
        return 200, {"rules": []}
    if method != "POST":
        return 405, refusal(405, method, FAULTS_PATH) | {"message": "use GET, POST or DELETE on /_nodeflow/faults"}
    try:
        rules, drop = parse_body(json.loads(raw_body or b"{}"))
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        return 400, refusal(400, method, FAULTS_PATH) | {"message": f"bad fault request: {exc}"}
    faults.add(rules)
    dropped = drop_watches() if drop else 0
    return 200, {"rules": faults.snapshot(), "droppedWatches": dropped}


class KubeFaultClient:
    """Sets faults on a running local-stack Kubernetes API emulator (``url`` = its base URL; ``ca_file``:
    the CA it is trusted through when it serves https)."""

    def __init__(self, url: str, timeout: float = 5.0, ca_file: Path | None = None) -> None:
        self._url = url.rstrip("/") + FAULTS_PATH
        self._timeout = timeout
        self._context = ssl.create_default_context(cafile=str(ca_file)) if ca_file is not None else None

    def fail(self, method: str, path_regex: str, status: int, count: int = 1) -> None:
        """Answer the next ``count`` requests (-1: until cleared) of ``method`` ("*" = any) whose path
        matches ``path_regex`` with ``status`` (e.g. 409, 429, 500, 503), changing nothing."""
        self._send("POST", {"rules": [{"method": method, "path": path_regex, "status": status, "count": count}]})

    def drop_watches(self) -> int:
        """End every live watch stream now; returns how many were ended."""
        return int(self._send("POST", {"drop_watches": True}).get("droppedWatches", 0))

    def get(self) -> list[dict[str, Any]]:
        """The rules with uses left, in the order they are checked."""
        rules: list[dict[str, Any]] = self._send("GET", None)["rules"]
        return rules

    def clear(self) -> None:
        self._send("DELETE", None)

    def _send(self, method: str, body: dict[str, Any] | None) -> dict[str, Any]:
        return send_json(self._url, method, body, self._timeout, self._context)


__all__ = [
    "FAULTS_PATH",
    "FaultRule",
    "KubeFaultClient",
    "KubeFaults",
    "control",
    "parse_body",
    "parse_rule",
    "refusal",
]
