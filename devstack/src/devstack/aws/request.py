"""What an AWS request to the local moto server is, read from its WSGI environ. No moto import, so the
layers that only look at requests (the response cache, the call recorder) load in milliseconds."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def request_body(environ: dict[str, Any]) -> bytes:
    """The request's body, read and put back so that the app behind still reads it."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def request_action(environ: dict[str, Any]) -> tuple[str | None, bool]:
    """The API action of a request and whether it uses the JSON protocol; restores the body it reads."""
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return str(target).rsplit(".", 1)[-1], True
    body = request_body(environ)
    query = parse_qs(environ.get("QUERY_STRING", "")) | parse_qs(body.decode("utf-8", "replace"))
    actions = query.get("Action")
    return (actions[0] if actions else None), False
