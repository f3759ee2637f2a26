"""Decoding a Kubernetes watch stream: newline-delimited JSON `{"type": ..., "object": {...}}` events.

Transport-agnostic: `iter_lines` takes any iterable of byte chunks (as they arrive off the socket) and
re-frames them into lines; `decode_events` turns lines into (type, object) pairs. Error events
(`type: ERROR`, object a `Status`) are passed through for the caller to translate.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


class WatchDecodeError(ValueError):
    """A watch line that is not a JSON event object."""


def iter_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Yields each complete, non-blank line of the byte stream, without its newline, as soon as its
    newline arrives; a trailing line without a newline is yielded at the end of the stream."""
    pending = b""
    for chunk in chunks:
        if not chunk:
            continue
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def decode_events(lines: Iterable[bytes]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yields (type, object) per line. Raises WatchDecodeError on a line that is not an event."""
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise WatchDecodeError(f"watch stream sent a line that is not JSON: {line[:200]!r}") from exc
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise WatchDecodeError(f"watch stream sent a line that is not an event: {line[:200]!r}")
        obj = event.get("object")
        yield event["type"], obj if isinstance(obj, dict) else {}
