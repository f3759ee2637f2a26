"""NodePool limits over a plan, without throttling scale-up.

A planned claim may launch as any of its instance-type options, so whatever it launches as must keep
its pool within `spec.limits`. Karpenter counts each planned claim as its largest option, so a limit
of 1,000 cpu stops a round after a few claims that could each become a several-hundred-vCPU type,
however small their pods. Here a claim counts, while the solver plans, only as its floor: its smallest
option by size (or the fewest smallest options that still meet its minValues), which it keeps whatever
happens. Once every pod is placed, `kept_counts` trims each claim's options, largest first and
plan-wide, only as far as the limits need, so that every combination of launched options stays within
them. A limit then refuses a pod only when the floors themselves no longer fit.

Sizes order the options for trimming: an option's size is the largest share of a limited resource
its capacity takes (`nodes` aside, since every option is one node).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from scheduling.provisioning.packing import IntArray, OptionMatrix

FloatArray = npt.NDArray[np.float64]


def option_sizes(matrix: OptionMatrix, limits: Mapping[str, int]) -> FloatArray:
    """Each option's size against these limits (0 when no limited resource is one it has)."""
    out: FloatArray = np.zeros(len(matrix.options), dtype=np.float64)
    for name, limit in limits.items():
        column = matrix.column.get(name)
        if name == "nodes" or column is None:
            continue
        out = np.maximum(out, matrix.capacity[:, column] / max(limit, 1))
    return out


def capacities(matrix: OptionMatrix, rows: IntArray, names: Sequence[str]) -> IntArray:
    """What each option counts against each named limit: its capacity (one for `nodes`), rows x names."""
    out: IntArray = np.zeros((len(rows), len(names)), dtype=np.int64)
    for index, name in enumerate(names):
        column = matrix.column.get(name)
        if name == "nodes":
            out[:, index] = 1
        elif column is not None:
            out[:, index] = matrix.capacity[rows, column]
    return out


def by_size(rows: IntArray, sizes: FloatArray) -> IntArray:
    """`rows` smallest first (ties in row order, which is cheapest first)."""
    ordered: IntArray = rows[np.lexsort((rows, sizes[rows]))]
    return ordered


class Trimmable:
    """One planned claim as the trim sees it: its options' sizes ascending, the running maximum of their
    capacities over the limited resources (row k: what its k+1 smallest options count), and its floor
    (how many smallest options it keeps in any case, at least one)."""

    def __init__(self, ordered_sizes: FloatArray, ordered_capacities: IntArray, floor: int) -> None:
        self.sizes = ordered_sizes
        self.reserve: IntArray = np.maximum.accumulate(ordered_capacities, axis=0)
        self.floor = max(1, min(floor, len(ordered_sizes)))

    def count_at(self, threshold: float) -> int:
        """How many options it keeps when every option larger than `threshold` goes (never below its floor)."""
        return max(self.floor, int(np.searchsorted(self.sizes, threshold, side="right")))


def kept_counts(claims: Sequence[Trimmable], budget: IntArray) -> list[int]:
    """How many of its smallest options each claim keeps so that their summed reservations stay within
    `budget` (the limits minus what exists already, per limited resource). Nothing is trimmed when all
    options fit. Otherwise every claim keeps its options up to the largest size threshold that fits (its
    floor at least), then, in claim order, those up to the next size where the room left allows.

    The floors must fit `budget` together (the solver plans a claim only while its floor fits)."""
    full = [len(c.sizes) for c in claims]
    if bool((_total(claims, full) <= budget).all()):
        return full
    thresholds = np.unique(np.concatenate([c.sizes for c in claims]))
    fits, too_big = -1, len(thresholds) - 1  # indexes into thresholds; -1 is "floors only"
    while too_big - fits > 1:
        middle = (fits + too_big) // 2
        counts = [c.count_at(float(thresholds[middle])) for c in claims]
        if bool((_total(claims, counts) <= budget).all()):
            fits = middle
        else:
            too_big = middle
    counts = [c.floor if fits < 0 else c.count_at(float(thresholds[fits])) for c in claims]
    used = _total(claims, counts)
    for index, claim in enumerate(claims):
        grown = claim.count_at(float(thresholds[too_big]))
        if grown == counts[index]:
            continue
        after = used - claim.reserve[counts[index] - 1] + claim.reserve[grown - 1]
        if bool((after <= budget).all()):
            counts[index], used = grown, after
    return counts


def _total(claims: Sequence[Trimmable], counts: Sequence[int]) -> IntArray:
    total: IntArray = np.stack([c.reserve[k - 1] for c, k in zip(claims, counts, strict=True)]).sum(axis=0)
    return total
