"""The one way tests wait for something: poll a check until it holds, with a deadline, never a bare sleep.

`eventually` (sync) and `eventually_async` return the check's first truthy value. A check may also
assert: an AssertionError counts as "not yet". Polls start 10 ms apart and back off to `interval`, so a
quick condition is seen at once and a slow one does not hammer what it polls. On the deadline they fail
with what was awaited and the last value (or the last assertion) seen, so a timeout says how far things
got."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
FIRST_INTERVAL = 0.01


class _Last:
    """The last thing a check produced: a value, or the assertion it raised."""

    def __init__(self) -> None:
        self.value: object = None
        self.error: AssertionError | None = None

    def failure(self, what: str, timeout: float) -> AssertionError:
        seen = f"last assertion: {self.error}" if self.error is not None else f"last: {self.value!r}"
        return AssertionError(f"timed out after {timeout:g}s waiting for {what}; {seen}")


def eventually(check: Callable[[], T | None], *, timeout: float = 10.0, interval: float = 0.25, what: str = "") -> T:
    """Poll `check` (at most `interval` seconds apart) until it returns something truthy (returned) or
    `timeout` seconds pass (AssertionError naming `what` and the last value)."""
    deadline = time.monotonic() + timeout
    last = _Last()
    wait = min(FIRST_INTERVAL, interval)
    while True:
        try:
            value = check()
        except AssertionError as err:
            last.error = err
        else:
            last.value, last.error = value, None
            if value:
                return value
        if time.monotonic() >= deadline:
            raise last.failure(what or getattr(check, "__name__", "the condition"), timeout) from last.error
        time.sleep(wait)
        wait = min(wait * 2, interval)


async def eventually_async(
    check: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = 10.0,
    interval: float = 0.25,
    what: str = "",
    pause: Callable[[], Awaitable[object]] | None = None,
) -> T:
    """`eventually` for a coroutine check. Between polls it awaits `pause()` when given (for example
    skipping workflow time on the time-skipping test server), else sleeps as `eventually` does."""
    deadline = time.monotonic() + timeout
    last = _Last()
    wait = min(FIRST_INTERVAL, interval)
    while True:
        try:
            value = await check()
        except AssertionError as err:
            last.error = err
        else:
            last.value, last.error = value, None
            if value:
                return value
        if time.monotonic() >= deadline:
            raise last.failure(what or getattr(check, "__name__", "the condition"), timeout) from last.error
        if pause is not None:
            await pause()
        else:
            await asyncio.sleep(wait)
            wait = min(wait * 2, interval)
