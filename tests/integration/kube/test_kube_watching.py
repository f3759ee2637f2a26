"""The watch stream decoder (pure)."""

from __future__ import annotations

import pytest

from kube.watching import WatchDecodeError, decode_events, iter_lines


@pytest.mark.parametrize(
    ("chunks", "lines"),
    [
        ([b'{"a":1}\n{"b":2}\n'], [b'{"a":1}', b'{"b":2}']),
        ([b'{"a"', b":1}\n{", b'"b":2}'], [b'{"a":1}', b'{"b":2}']),
        ([b"\n\n", b'{"a":1}\n', b"", b"  \n"], [b'{"a":1}']),
        ([], []),
    ],
)
def test_iter_lines_reframes_chunks(chunks: list[bytes], lines: list[bytes]) -> None:
    assert list(iter_lines(chunks)) == lines


def test_decode_events_yields_type_and_object() -> None:
    lines = [b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}', b'{"type":"ERROR","object":{"code":410}}']
    assert list(decode_events(lines)) == [("ADDED", {"metadata": {"name": "a"}}), ("ERROR", {"code": 410})]


@pytest.mark.parametrize("line", [b"not json", b"[1,2]", b'{"object":{}}'])
def test_decode_events_rejects_non_events(line: bytes) -> None:
    with pytest.raises(WatchDecodeError):
        list(decode_events([line]))
