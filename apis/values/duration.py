"""Go-style durations as Karpenter writes them ("720h", "1h30m", "30s", "Never").

`parse_duration` reads any Go duration; the `Duration`, `FiniteDuration` and `BudgetDuration` field types
accept only what Karpenter's CRDs accept (whole numbers of s, m, h; budgets only m and h).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

from pydantic import AfterValidator

from apis.values.syntax import SchemaExtra

_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
NEVER = "Never"

# Karpenter's CRD patterns.
DURATION_PATTERN = r"^(([0-9]+(s|m|h))+|Never)$"
FINITE_DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
BUDGET_DURATION_PATTERN = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
_FINITE = re.compile(FINITE_DURATION_PATTERN)
_BUDGET = re.compile(BUDGET_DURATION_PATTERN)


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
    """Pydantic validator helper: returns the text unchanged when it matches Karpenter's duration pattern
    (whole numbers with s, m or h, e.g. "720h", "1h30m"; "Never" only when allowed)."""
    if text == NEVER:
        if not allow_never:
            raise ValueError('"Never" is not allowed here: give a duration such as "24h"')
        return text
    if not _FINITE.fullmatch(text):
        never = ' or "Never"' if allow_never else ""
        raise ValueError(
            f'invalid duration "{text}": use whole numbers with the units s, m or h, e.g. "720h" or "1h30m"{never}'
        )
    return text


def validate_budget_duration(text: str) -> str:
    """A disruption budget's duration: minutes and hours only ("30m", "8h", "1h30m"), as cron has no seconds."""
    if not _BUDGET.fullmatch(text):
        raise ValueError(
            f'invalid budget duration "{text}": use whole hours and/or minutes, e.g. "30m", "8h" or "1h30m"'
        )
    return text


def _finite(text: str) -> str:
    return validate_duration(text, allow_never=False)


Duration = Annotated[str, AfterValidator(validate_duration), SchemaExtra({"pattern": DURATION_PATTERN})]
FiniteDuration = Annotated[str, AfterValidator(_finite), SchemaExtra({"pattern": FINITE_DURATION_PATTERN})]
BudgetDuration = Annotated[
    str, AfterValidator(validate_budget_duration), SchemaExtra({"pattern": BUDGET_DURATION_PATTERN})
]
