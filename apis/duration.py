"""Go-style durations as Karpenter writes them ("720h", "1h30m", "30s", "Never")."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
NEVER = "Never"


def parse_duration(text: str) -> timedelta | None:
    """The duration, or None for "Never". Raises ValueError with the accepted forms on bad input."""
    if text == NEVER:
        return None
    if not text or _PART.sub("", text) != "":
        raise ValueError(f'invalid duration "{text}": use a number and a unit (s, m, h), e.g. "720h" or "1h30m"')
    return timedelta(seconds=sum(float(n) * _UNITS[u] for n, u in _PART.findall(text)))


def format_duration(value: timedelta) -> str:
    """Go's compact form: 90 minutes -> "1h30m0s"."""
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{minutes}m{seconds}s"
    return f"{seconds}s"


def validate_duration(text: str, *, allow_never: bool = True) -> str:
    """Pydantic validator helper: returns the text unchanged when valid."""
    if text == NEVER:
        if not allow_never:
            raise ValueError('"Never" is not allowed here: give a duration such as "24h"')
        return text
    parse_duration(text)
    return text
