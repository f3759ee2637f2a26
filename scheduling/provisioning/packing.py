"""A pool's instance-type options as integer matrices, so a claim's "which options still fit, and how
many more of these pods" is one vectorised step instead of a loop over hundreds of types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from scheduling.provisioning.catalog import Option

IntArray = npt.NDArray[np.int64]
BIG = 1 << 60


class OptionMatrix:
    """Rows: options (in the pool's order, cheapest first); columns: resource names (sorted)."""

    def __init__(self, options: Sequence[Option]) -> None:
        self.options = list(options)
        names = {name for o in options for name in (*o.allocatable, *o.capacity)}
        self.resources = sorted(names | {"pods"})
        self.column = {name: i for i, name in enumerate(self.resources)}
        shape = (len(self.options), len(self.resources))
        self.allocatable: IntArray = np.zeros(shape, dtype=np.int64)
        self.capacity: IntArray = np.zeros(shape, dtype=np.int64)
        for row, option in enumerate(self.options):
            for name, value in option.allocatable.items():
                self.allocatable[row, self.column[name]] = value
            for name, value in option.capacity.items():
                self.capacity[row, self.column[name]] = value
        self.row_of = {id(o): i for i, o in enumerate(self.options)}

    def vector(self, resources: Mapping[str, int]) -> IntArray | None:
        """The resources as a row vector; None when one is requested that no option has."""
        out = np.zeros(len(self.resources), dtype=np.int64)
        for name, value in resources.items():
            column = self.column.get(name)
            if column is None:
                if value > 0:
                    return None
                continue
            out[column] = value
        return out

    def fit_counts(self, rows: IntArray, used: IntArray, requests: IntArray) -> IntArray:
        """For each row, how many more pods with `requests` fit beside `used` (0 when none)."""
        wanted = requests > 0
        if not wanted.any():
            return np.full(len(rows), BIG, dtype=np.int64)
        free = self.allocatable[rows][:, wanted] - used[wanted]
        counts: IntArray = (free // requests[wanted]).min(axis=1)
        return np.maximum(counts, 0)

    def max_free(self, rows: IntArray, used: IntArray) -> list[int]:
        if len(rows) == 0:
            return [-1] * len(self.resources)
        free: list[int] = (self.allocatable[rows].max(axis=0) - used).tolist()
        return free
