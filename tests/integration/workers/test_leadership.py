"""workers.leadership.LeaderElector against the Kubernetes API emulator, on short timings: one leader at
a time, hand-over on release, a leader cut off from the API stops before another takes over."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from kube.client import KubeClient
from kube.errors import ServerError
from kube.leases import LeaseClient, LeaseRecord, StoredLease
from tests.eventually import eventually_async
from workers.leader_election import Election, Timing
from workers.leadership import LeaderElector

FAST = Timing(lease_duration=3.0, renew_deadline=2.0, retry_period=0.25)
NAMESPACE = "kube-system"


class FlakyLeases(LeaseClient):
    """A LeaseClient whose calls fail while `cut_off` (the API server unreachable from this replica)."""

    cut_off = False

    def read(self) -> StoredLease | None:
        self._check()
        return super().read()

    def update(self, record: LeaseRecord, resource_version: str) -> StoredLease:
        self._check()
        return super().update(record, resource_version)

    def _check(self) -> None:
        if self.cut_off:
            raise ServerError("connection refused")


class Candidate:
    """One replica: its elector, its stop event, and a log of when its leader's work ran."""

    def __init__(self, kube: KubeClient, lease: str, identity: str, monitor: Monitor) -> None:
        self.leases = FlakyLeases(kube, NAMESPACE, lease)
        self.stop = asyncio.Event()
        self.working = False
        self.terms = 0
        self.monitor = monitor
        self.elector = LeaderElector(self.leases, Election(identity, FAST), self.lead)
        self.task: asyncio.Task[None] | None = None

    async def lead(self) -> None:
        self.terms += 1
        self.working = True
        self.monitor.check()
        try:
            await asyncio.Event().wait()
        finally:
            self.working = False

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(self.stop))

    async def halt(self) -> None:
        self.stop.set()
        assert self.task is not None
        await asyncio.wait_for(self.task, 5)


class Monitor:
    """Fails the test if two candidates' leader work ever runs at once."""

    def __init__(self) -> None:
        self.candidates: list[Candidate] = []
        self.overlaps = 0

    def check(self) -> None:
        if sum(c.working for c in self.candidates) > 1:
            self.overlaps += 1


@pytest.fixture
async def pair(kube: KubeClient, request: pytest.FixtureRequest) -> AsyncIterator[tuple[Candidate, Candidate]]:
    monitor = Monitor()
    lease = f"lease-{request.node.name[:40].replace('_', '-')}"
    a, b = Candidate(kube, lease, "a", monitor), Candidate(kube, lease, "b", monitor)
    monitor.candidates = [a, b]
    watching = asyncio.create_task(_watch(monitor))
    a.start()
    yield a, b
    for c in (a, b):
        if not c.stop.is_set():
            await c.halt()
    watching.cancel()
    assert monitor.overlaps == 0, "two leaders at once"


async def _watch(monitor: Monitor) -> None:
    while True:
        monitor.check()
        await asyncio.sleep(0.01)


def holder(c: Candidate) -> str:
    read = c.leases.read()
    return read.record.holder if read is not None else ""


async def test_one_candidate_leads_and_the_other_waits(pair: tuple[Candidate, Candidate]) -> None:
    a, b = pair
    await eventually_async(_true(lambda: a.working and a.elector.leading), timeout=5, what="a leading")
    b.start()
    await eventually_async(_true(lambda: holder(a) == "a" and a.terms == 1), timeout=5, what="a holding the Lease")
    deadline = time.monotonic() + 1.5 * FAST.lease_duration  # b keeps trying all along: it must not win
    while time.monotonic() < deadline:
        assert not b.working and not b.elector.leading
        await asyncio.sleep(0.05)
    assert a.working and a.terms == 1 and holder(a) == "a"


async def test_a_stopping_leader_releases_and_the_other_takes_over_at_its_next_retry(
    pair: tuple[Candidate, Candidate],
) -> None:
    a, b = pair
    await eventually_async(_true(lambda: a.working), timeout=5, what="a leading")
    b.start()
    await a.halt()
    assert not a.working
    started = time.monotonic()
    await eventually_async(_true(lambda: b.working), timeout=5, what="b leading")
    assert time.monotonic() - started < FAST.lease_duration  # released: no waiting out the lease
    assert holder(b) == "b" and b.leases.read().record.transitions == 1  # type: ignore[union-attr]


async def test_a_leader_cut_off_from_the_api_stops_before_the_other_takes_over(
    pair: tuple[Candidate, Candidate],
) -> None:
    a, b = pair
    await eventually_async(_true(lambda: a.working), timeout=5, what="a leading")
    b.start()
    a.leases.cut_off = True
    cut_at = time.monotonic()
    await eventually_async(_true(lambda: not a.working), timeout=5, what="a to stop leading")
    stopped = time.monotonic() - cut_at
    await eventually_async(_true(lambda: b.working), timeout=10, what="b leading")
    took_over = time.monotonic() - cut_at
    assert stopped <= FAST.renew_deadline + 1.0
    assert stopped < took_over <= FAST.lease_duration + FAST.renew_deadline + 1.0
    a.leases.cut_off = False  # a, back, finds b holding the Lease and stays a candidate
    await eventually_async(_true(lambda: holder(a) == "b"), timeout=5, what="b holding the Lease")
    assert not a.working and b.terms == 1


async def test_leader_work_that_fails_gives_the_lease_back_and_campaigns_again(kube: KubeClient) -> None:
    runs: list[int] = []

    async def lead() -> None:
        runs.append(1)
        if len(runs) == 1:
            raise RuntimeError("start-up failed")
        await asyncio.Event().wait()

    elector = LeaderElector(LeaseClient(kube, NAMESPACE, "lease-failing-work"), Election("solo", FAST), lead)
    stop = asyncio.Event()
    task = asyncio.create_task(elector.run(stop))
    await eventually_async(_true(lambda: len(runs) == 2 and elector.leading), timeout=5, what="a second term")
    stop.set()
    await asyncio.wait_for(task, 5)
    read = LeaseClient(kube, NAMESPACE, "lease-failing-work").read()
    assert read is not None and read.record.holder == ""  # released on stop


def _true(predicate: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    """An async check for eventually_async from a plain predicate."""

    async def check() -> bool:
        return bool(predicate())

    return check
