"""The JSON request the local stack's control endpoints (`/_nodeflow/faults` on moto and on the
Kubernetes emulator) take and answer."""

from __future__ import annotations

import json
import ssl
import urllib.request
from typing import Any


def send_json(
    url: str, method: str, body: dict[str, Any] | None, timeout: float, context: ssl.SSLContext | None = None
) -> dict[str, Any]:
    """Send `body` (if any) as JSON with `method`; the decoded JSON answer ({} when empty). HTTP errors
    raise urllib.error.HTTPError, whose body names the bad field. `context`: for an https `url`."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        result: dict[str, Any] = json.loads(response.read() or b"{}")
        return result
