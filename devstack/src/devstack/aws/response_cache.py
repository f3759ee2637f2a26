"""A disk cache for moto's answers that never change: DescribeInstanceTypes.

moto serialises its 1,395 instance types into 5.8 MB of XML in about 2.3 s of CPU, and every worker that
starts reads them (the product's instance-type catalog); a test run starts dozens of stacks. The answer
depends only on moto's version, the region and the request's parameters, so the first stack that asks
stores it under a key made of those, and later stacks, in any process, read the file instead.

Only successful answers are stored, written to a temporary file and renamed, so concurrent stacks never
read half a file. With `authorize` (moto's access control is on, devstack.aws.access), a stored answer is
served only to a request that moto would allow; any other goes to moto, which refuses it as it would.
Faults injected by `devstack.aws.wsgi.FaultInjectingApp` sit in front of this layer and still apply.
Delete the directory to drop the cache; nothing else expires it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from devstack.aws.request import WSGIApp, request_body

CACHED_ACTIONS = frozenset({"DescribeInstanceTypes"})
FORMAT = 1  # bump when what is stored changes


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/nodeflow-devstack/moto` (else `~/.cache/...`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodeflow-devstack" / "moto"


def _region(environ: dict[str, Any]) -> str:
    """The region of a SigV4-signed request's credential scope (".../<date>/<region>/<service>/aws4_request")."""
    auth = str(environ.get("HTTP_AUTHORIZATION", ""))
    scope = auth.split("Credential=", 1)[-1].split(",", 1)[0].split("/")
    return scope[2] if len(scope) >= 5 else ""


class ResponseCache:
    """WSGI middleware in front of moto: answers CACHED_ACTIONS from `directory` when it can."""

    def __init__(
        self, app: WSGIApp, directory: Path, authorize: Callable[[dict[str, Any], str], bool] | None = None
    ) -> None:
        """`authorize(environ, "ec2:<Action>")`: whether moto's access control allows the request (None:
        every request is)."""
        self._app = app
        self._dir = directory
        self._moto = version("moto")
        self._authorize = authorize

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST" or environ.get("HTTP_X_AMZ_TARGET"):
            return self._app(environ, start_response)
        params = sorted(parse_qsl(request_body(environ).decode("utf-8", "replace"), keep_blank_values=True))
        action = dict(params).get("Action")
        if action not in CACHED_ACTIONS or (
            self._authorize is not None and not self._authorize(environ, f"ec2:{action}")
        ):
            return self._app(environ, start_response)
        key = json.dumps([FORMAT, self._moto, _region(environ), params]).encode()
        path = self._dir / f"{hashlib.sha256(key).hexdigest()}.xml"
        try:
            cached = path.read_bytes()
        except OSError:
            return self._answer_and_store(environ, start_response, path)
        start_response("200 OK", [("Content-Type", "text/xml"), ("Content-Length", str(len(cached)))])
        return [cached]

    def _answer_and_store(
        self, environ: dict[str, Any], start_response: Callable[..., Any], path: Path
    ) -> Iterable[bytes]:
        seen: dict[str, str] = {}

        def capture(status: str, headers: list[tuple[str, str]], *exc_info: Any) -> Any:
            seen["status"] = status
            return start_response(status, headers, *exc_info)

        chunks = list(self._app(environ, capture))
        if seen.get("status", "").startswith("200"):
            try:
                self._dir.mkdir(parents=True, exist_ok=True)
                with tempfile.NamedTemporaryFile(dir=self._dir, suffix=".tmp", delete=False) as out:
                    out.write(b"".join(chunks))
                os.replace(out.name, path)
            except OSError:
                pass  # an unwritable cache only costs speed
        return chunks
