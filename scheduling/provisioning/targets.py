"""Where pods can go: nodes that exist (or NodeClaims in flight), and new NodeClaims being planned.

Both keep what is used on them (requests, host ports) and the pods placed in this plan. A new claim
also keeps its requirements and the instance-type options still able to hold everything placed so far;
placing pods narrows both, never widens them, so a claim that cannot take a pod now never will.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from apis.labels import HOSTNAME
from apis.values.quantity import ResourceList
from scheduling.constraints.requirements import Requirements
from scheduling.constraints.resources import HostPort
from scheduling.constraints.taints import TaintSpec
from scheduling.provisioning.catalog import OFFERING_KEYS, Option
from scheduling.provisioning.packing import IntArray
from scheduling.provisioning.pools import Pool

BIG = 1 << 60


def fit_count(requests: Mapping[str, int], free: Mapping[str, int]) -> int:
    """How many pods with these requests fit in `free` (BIG when nothing is requested)."""
    count = BIG
    for name, want in requests.items():
        have = free.get(name, 0)
        if have < want:
            return 0
        count = min(count, have // want)
    return count


@dataclass(eq=False)
class NodeTarget:
    """An existing Node, or a NodeClaim in flight (`in_flight`), with fixed labels and allocatable."""

    name: str
    labels: dict[str, str]
    taints: tuple[TaintSpec, ...]
    allocatable: ResourceList
    used: ResourceList = field(default_factory=dict)
    ports: set[HostPort] = field(default_factory=set)
    pods: list[str] = field(default_factory=list)
    in_flight: bool = False

    def domain(self, key: str) -> str | None:
        if key == HOSTNAME:
            return self.labels.get(HOSTNAME, self.name)
        return self.labels.get(key)

    def free(self) -> ResourceList:
        return {name: value - self.used.get(name, 0) for name, value in self.allocatable.items()}


@dataclass(eq=False)
class Claim:
    """A NodeClaim this plan would launch. `rows` index the pool's option matrix: the options that still
    hold everything placed so far; `used` is a vector over the matrix's resources."""

    index: int
    pool: Pool
    reqs: Requirements
    rows: IntArray
    used: IntArray
    ports: set[HostPort] = field(default_factory=set)
    pods: list[str] = field(default_factory=list)
    reserved: ResourceList = field(default_factory=dict)  # counted against the pool's limits
    max_free: list[int] = field(default_factory=list)
    min_values_relaxed: bool = False  # `reqs` has a minValues lowered to what `rows` offer (BestEffort)

    @property
    def hostname(self) -> str:
        return f"{self.pool.name}-new-{self.index}"

    @property
    def options(self) -> list[Option]:
        options = self.pool.matrix.options
        return [options[row] for row in self.rows.tolist()]

    def domain(self, key: str) -> str | None:
        if key == HOSTNAME:
            return self.hostname
        return self.reqs.get_req(key).single() if key in self.reqs else None

    def used_resources(self) -> ResourceList:
        return {name: int(v) for name, v in zip(self.pool.matrix.resources, self.used.tolist(), strict=True) if v}

    def refresh(self) -> None:
        """Recompute the per-resource headroom bound (largest free amount over the options) and the limit
        reservation (what the claim's floor counts, see `scheduling.provisioning.limits`), after the options or the
        usage changed."""
        self.max_free = self.pool.matrix.max_free(self.rows, self.used)
        if not self.pool.limits:
            return
        ordered, floor = self.floor(self.rows, self.reqs)
        reserved = self.pool.reservation(ordered[: floor or len(ordered)])
        for name, value in reserved.items():
            self.pool.used[name] = self.pool.used.get(name, 0) - self.reserved.get(name, 0) + value
        self.reserved = reserved

    def floor(self, rows: IntArray, reqs: Requirements) -> tuple[IntArray, int | None]:
        """`rows` smallest first against the pool's limits, and how many of the smallest a trim keeps: one,
        or the fewest that still meet every minValues of `reqs` (None when all of them do not)."""
        ordered = self.pool.by_size(rows)
        mins = [(key, req.min_values) for key, req in reqs.items() if req.min_values]
        if not mins:
            return ordered, min(1, len(ordered))
        options = self.pool.matrix.options

        def meets(count: int) -> bool:
            chosen = [options[row] for row in ordered[:count].tolist()]
            return all(self.distinct_values(key, chosen, reqs) >= least for key, least in mins)

        if not meets(len(ordered)):
            return ordered, None
        short, enough = 0, len(ordered)
        while enough - short > 1:
            middle = (short + enough) // 2
            if meets(middle):
                enough = middle
            else:
                short = middle
        return ordered, enough

    def distinct_values(self, key: str, options: list[Option], reqs: Requirements | None = None) -> int:
        reqs = self.reqs if reqs is None else reqs
        if key in OFFERING_KEYS:
            values = {o.value(key) for opt in options for o in opt.compatible_offers(reqs)}
            return len(values - {None})
        return len({opt.labels.get(key) for opt in options if opt.labels.get(key) is not None})


Target = NodeTarget | Claim
