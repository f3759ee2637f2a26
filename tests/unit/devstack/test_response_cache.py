"""The moto response cache: one serialisation per (moto version, region, parameters), shared through files."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from devstack.aws.response_cache import ResponseCache

AUTH = "AWS4-HMAC-SHA256 Credential=key/20260101/{region}/ec2/aws4_request, SignedHeaders=host, Signature=x"


class Moto:
    """A stand-in WSGI app that counts the requests it answers."""

    def __init__(self, status: str = "200 OK") -> None:
        self.status = status
        self.calls = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        self.calls += 1
        body = environ["wsgi.input"].read()
        start_response(self.status, [("Content-Type", "text/xml")])
        return [b"<answer>", str(self.calls).encode(), b"</answer>", body]


def call(app: ResponseCache, body: str, region: str = "us-west-2") -> tuple[str, bytes]:
    data = body.encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data),
        "HTTP_AUTHORIZATION": AUTH.format(region=region),
    }
    seen: list[str] = []
    chunks = app(environ, lambda status, headers, *exc: seen.append(status))
    return seen[0], b"".join(chunks)


def test_describe_instance_types_is_answered_once_per_parameters_and_region(tmp_path: Path) -> None:
    moto = Moto()
    first = ResponseCache(moto, tmp_path)
    request = "Action=DescribeInstanceTypes&Version=2016-11-15"
    assert call(first, request) == ("200 OK", b"<answer>1</answer>" + request.encode())
    again = ResponseCache(moto, tmp_path)  # another stack, another process: the same directory
    assert call(again, request) == ("200 OK", b"<answer>1</answer>" + request.encode())
    assert moto.calls == 1
    call(again, request + "&InstanceType.1=m5.large")
    call(again, request, region="eu-west-1")
    assert moto.calls == 3


def test_other_actions_and_failed_answers_are_not_kept(tmp_path: Path) -> None:
    moto = Moto()
    cache = ResponseCache(moto, tmp_path)
    for _ in range(2):
        assert call(cache, "Action=DescribeInstances&Version=2016-11-15")[0] == "200 OK"
    assert moto.calls == 2
    failing = Moto("503 Service Unavailable")
    cache = ResponseCache(failing, tmp_path)
    for _ in range(2):
        assert call(cache, "Action=DescribeInstanceTypes&MaxResults=5")[0] == "503 Service Unavailable"
    assert failing.calls == 2 and not list(tmp_path.glob("*.tmp"))
