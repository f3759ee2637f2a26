"""A five-field cron schedule (minute hour day-of-month month day-of-week), evaluated in UTC. Pure.

Enough of cron for NodePool disruption budgets, which Karpenter parses as standard cron in UTC: numbers,
`*`, lists (`1,15`), ranges (`9-17`), steps (`*/15`, `0-30/10`), month and weekday names (`jan`, `mon-fri`),
weekday 7 as Sunday, and the macros `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`,
`@hourly`. As in standard cron, when both day-of-month and day-of-week are restricted (neither starts
with `*`), a day matches if either does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTHS = {m: i + 1 for i, m in enumerate(MONTH_NAMES)}
WEEKDAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, low, high, value names) per field, in order.
FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day-of-month", 1, 31, {}),
    ("month", 1, 12, MONTHS),
    ("day-of-week", 0, 7, WEEKDAYS),
)


@dataclass(frozen=True)
class Cron:
    """A parsed schedule: the allowed values of each field (weekday 0 = Sunday)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_restricted: bool
    weekdays_restricted: bool

    def matches_day(self, when: datetime) -> bool:
        """Whether the schedule fires on that date (month, and day-of-month/day-of-week)."""
        if when.month not in self.months:
            return False
        dom = when.day in self.days
        dow = (when.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return dom or dow
        return dom and dow

    def last_fire(self, now: datetime, window: timedelta) -> datetime | None:
        """The latest time t with now - window < t <= now at which the schedule fires, or None.

        Karpenter's budget is active when the schedule's next hit after (now - duration) is not after now,
        which is the same as a hit in (now - duration, now]."""
        earliest = now - window
        day = now.replace(hour=0, minute=0, second=0, microsecond=0)
        while day + timedelta(days=1) > earliest:
            if self.matches_day(day):
                for hour in sorted(self.hours, reverse=True):
                    for minute in sorted(self.minutes, reverse=True):
                        fire = day.replace(hour=hour, minute=minute)
                        if fire <= now:
                            return fire if fire > earliest else None
            day -= timedelta(days=1)
        return None


def _values(text: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    out: set[int] = set()
    for part in text.lower().split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(f"step {step_text!r} must be at least 1")
        if body == "*":
            start, end = low, high
        elif "-" in body:
            first, _, last = body.partition("-")
            start, end = _number(first, names), _number(last, names)
        else:
            start = _number(body, names)
            end = high if step_text else start
        if not (low <= start <= high and low <= end <= high) or start > end:
            raise ValueError(f"{part!r} is outside {low}-{high}")
        out.update(range(start, end + 1, step))
    return frozenset(out)


def _number(text: str, names: dict[str, int]) -> int:
    if text in names:
        return names[text]
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a number" + (f" or a name ({', '.join(names)})" if names else ""))
    return int(text)


def parse_cron(expression: str) -> Cron:
    """Parse a five-field expression or a macro. Raises ValueError naming the bad field."""
    text = MACROS.get(expression.strip().lower(), expression)
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(f'cron "{expression}" must have five fields (minute hour day month weekday) or be a macro')
    parsed = []
    for field, (name, low, high, names) in zip(fields, FIELDS, strict=True):
        try:
            parsed.append(_values(field, low, high, names))
        except ValueError as err:
            raise ValueError(f'cron "{expression}": {name} {err}') from None
    weekdays = frozenset(0 if d == 7 else d for d in parsed[4])
    return Cron(
        minutes=parsed[0],
        hours=parsed[1],
        days=parsed[2],
        months=parsed[3],
        weekdays=weekdays,
        days_restricted=not fields[2].startswith("*"),
        weekdays_restricted=not fields[4].startswith("*"),
    )
