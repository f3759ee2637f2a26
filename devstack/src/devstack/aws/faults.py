"""Injected AWS faults for the local stack: the store the patched moto reads, and a client for its endpoint.

Faults are set at run time over HTTP on the moto server itself:

    POST   /_nodeflow/faults  {"insufficientCapacity": [{"instanceType", "zone", "capacityType"?}],
                               "throttle": {"CreateFleet": 3}, "serverError": {"DescribeInstances": 1},
                               "accessDenied": {"GetProducts": 1}}
    GET    /_nodeflow/faults  -> the current faults (same shape)
    DELETE /_nodeflow/faults  -> clears everything

POST adds to what is there. `throttle` / `serverError` / `accessDenied` answer the next N calls of that
API action with RequestLimitExceeded (HTTP 503) / InternalError (HTTP 500) / an access-denied error
(HTTP 400 AccessDeniedException on JSON-protocol services, 403 UnauthorizedOperation on EC2).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from devstack.control import send_json

FAULTS_PATH = "/_nodeflow/faults"


@dataclass(frozen=True, order=True)
class CapacityFault:
    instance_type: str
    zone: str
    capacity_type: str | None = None  # None = both spot and on-demand

    def matches(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return (self.instance_type, self.zone) == (instance_type, zone) and self.capacity_type in (None, capacity_type)


class FaultStore:
    """Thread-safe fault state of one moto server, plus its CreateFleet ClientToken memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._capacity: set[CapacityFault] = set()
        self._throttle: dict[str, int] = {}
        self._server_error: dict[str, int] = {}
        self._access_denied: dict[str, int] = {}
        self._fleet_tokens: dict[str, dict[str, Any]] = {}

    def add(self, body: dict[str, Any]) -> None:
        """Merge a POST body. Raises ValueError naming the bad field."""
        capacity = [self._capacity_fault(i, item) for i, item in enumerate(body.get("insufficientCapacity", []))]
        throttle = self._counts(body, "throttle")
        server_error = self._counts(body, "serverError")
        access_denied = self._counts(body, "accessDenied")
        unknown = sorted(set(body) - {"insufficientCapacity", "throttle", "serverError", "accessDenied"})
        if unknown:
            raise ValueError(
                f"unknown fault fields {unknown}: use insufficientCapacity, throttle, serverError or accessDenied"
            )
        with self._lock:
            self._capacity.update(capacity)
            for action, count in throttle.items():
                self._throttle[action] = self._throttle.get(action, 0) + count
            for action, count in server_error.items():
                self._server_error[action] = self._server_error.get(action, 0) + count
            for action, count in access_denied.items():
                self._access_denied[action] = self._access_denied.get(action, 0) + count

    @staticmethod
    def _capacity_fault(index: int, item: Any) -> CapacityFault:
        if not isinstance(item, dict) or not item.get("instanceType") or not item.get("zone"):
            raise ValueError(f"insufficientCapacity[{index}] needs instanceType and zone, got {item!r}")
        capacity_type = item.get("capacityType")
        if capacity_type not in (None, "spot", "on-demand"):
            raise ValueError(f'insufficientCapacity[{index}].capacityType must be "spot" or "on-demand" or absent')
        return CapacityFault(str(item["instanceType"]), str(item["zone"]), capacity_type)

    @staticmethod
    def _counts(body: dict[str, Any], field: str) -> dict[str, int]:
        value = body.get(field, {})
        if not isinstance(value, dict) or not all(isinstance(v, int) and v >= 0 for v in value.values()):
            raise ValueError(f'"{field}" must map an API action to a non-negative count, e.g. {{"CreateFleet": 2}}')
        return {str(k): int(v) for k, v in value.items()}

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "insufficientCapacity": [
                    {"instanceType": f.instance_type, "zone": f.zone, "capacityType": f.capacity_type}
                    for f in sorted(self._capacity, key=lambda f: (f.instance_type, f.zone, f.capacity_type or ""))
                ],
                "throttle": {k: v for k, v in sorted(self._throttle.items()) if v},
                "serverError": {k: v for k, v in sorted(self._server_error.items()) if v},
                "accessDenied": {k: v for k, v in sorted(self._access_denied.items()) if v},
            }

    def clear(self) -> None:
        with self._lock:
            self._capacity.clear()
            self._throttle.clear()
            self._server_error.clear()
            self._access_denied.clear()

    def clear_fleet_tokens(self) -> None:
        with self._lock:
            self._fleet_tokens.clear()

    def capacity_refused(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        with self._lock:
            return any(f.matches(instance_type, zone, capacity_type) for f in self._capacity)

    def take(self, action: str) -> str | None:
        """Consume one injected failure for this action: "throttle", "server_error", "access_denied" or None."""
        with self._lock:
            kinds = (
                ("throttle", self._throttle),
                ("server_error", self._server_error),
                ("access_denied", self._access_denied),
            )
            for kind, counts in kinds:
                if counts.get(action, 0) > 0:
                    counts[action] -= 1
                    return kind
        return None

    def fleet_result(self, token: str) -> dict[str, Any] | None:
        with self._lock:
            return self._fleet_tokens.get(token)

    def remember_fleet(self, token: str, result: dict[str, Any]) -> None:
        with self._lock:
            self._fleet_tokens.setdefault(token, result)


class FaultClient:
    """Sets faults on a running local-stack moto server (`url` = its base URL)."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self._url = url.rstrip("/") + FAULTS_PATH
        self._timeout = timeout

    def insufficient_capacity(self, instance_type: str, zone: str, capacity_type: str | None = None) -> None:
        """CreateFleet refuses this offering (both capacity types when None) with InsufficientInstanceCapacity."""
        item = {"instanceType": instance_type, "zone": zone, "capacityType": capacity_type}
        self._send("POST", {"insufficientCapacity": [item]})

    def throttle(self, action: str, count: int) -> None:
        """The next `count` calls of `action` (e.g. "CreateFleet") fail with RequestLimitExceeded."""
        self._send("POST", {"throttle": {action: count}})

    def server_error(self, action: str, count: int) -> None:
        """The next `count` calls of `action` fail with HTTP 500 InternalError."""
        self._send("POST", {"serverError": {action: count}})

    def access_denied(self, action: str, count: int) -> None:
        """The next `count` calls of `action` fail as a caller without the permission would."""
        self._send("POST", {"accessDenied": {action: count}})

    def get(self) -> dict[str, Any]:
        return self._send("GET", None)

    def clear(self) -> None:
        self._send("DELETE", None)

    def _send(self, method: str, body: dict[str, Any] | None) -> dict[str, Any]:
        return send_json(self._url, method, body, self._timeout)
