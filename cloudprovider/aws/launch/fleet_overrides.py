"""Which of a launch's offerings go into its CreateFleet: at most `MAX_OVERRIDES`, cheapest first, keeping
the flexibility NodePool `minValues` asks for.

Karpenter sends at most 60 instance types to CreateFleet and truncates the cheapest-first list so that
every requirement with `minValues` keeps that many distinct values. Here the cap applies to the overrides
themselves (type x zone), so a launch allowed in three zones cannot send 180: `limit_overrides` first takes,
cheapest first, each override that brings a value some `minValues` key still lacks, then fills the
remaining places with the cheapest of the rest. When even that cannot reach a key's `minValues` within
the cap, the cap wins (EC2 refuses more) and the launch goes out with the most values it can hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

MAX_OVERRIDES = 60

T = TypeVar("T")


def limit_overrides(
    overrides: Sequence[T],
    value_of: Callable[[T, str], str | None],
    min_values: Mapping[str, int],
    limit: int = MAX_OVERRIDES,
) -> list[T]:
    """At most `limit` of `overrides` (cheapest first), in their order; `value_of(override, key)` is the
    override's value of a `min_values` key (None: it has none)."""
    if len(overrides) <= limit:
        return list(overrides)
    chosen: set[int] = set()
    seen: dict[str, set[str]] = {key: set() for key in min_values}

    def lacking(key: str) -> bool:
        return len(seen[key]) < min_values[key]

    for index, override in enumerate(overrides):
        if len(chosen) >= limit or not any(lacking(key) for key in min_values):
            break
        values = {key: value_of(override, key) for key in min_values}
        if any(lacking(key) and value is not None and value not in seen[key] for key, value in values.items()):
            chosen.add(index)
            for key, value in values.items():
                if value is not None:
                    seen[key].add(value)
    for index in range(len(overrides)):
        if len(chosen) >= limit:
            break
        chosen.add(index)
    return [overrides[i] for i in sorted(chosen)]
