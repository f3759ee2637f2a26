"""`LeaderElector`: runs the leader's work only while this worker holds the Lease.

Every replica runs one; the decisions are `workers.leader_election.Election`'s, the Lease reads and
writes `kube.leases.LeaseClient`'s (in a small thread pool of their own: the Kubernetes client is
synchronous). The loop:
- as a candidate, try to take the Lease every `retry_period`;
- once it holds it, start `lead()` as a task and renew every `retry_period`;
- when a renewal shows another holder, or no renewal succeeded within `renew_deadline` (a write still
  in flight at the deadline is not waited for), cancel `lead()` at once and become a candidate again;
  the same when `lead()` ends by itself (it is meant to run until cancelled; an exception is logged);
- when `stop` is set: cancel `lead()`, then release the Lease (empty holder) so another replica takes
  over at its next retry instead of after the lease duration.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kube.errors import KubeError
from kube.leases import LeaseClient
from workers.leader_election import Election

log = logging.getLogger(__name__)
T = TypeVar("T")


class Attempt(enum.Enum):
    HELD = "held"  # this candidate holds the Lease now
    TAKEN = "taken"  # another candidate holds it
    FAILED = "failed"  # the read or write failed (conflict, API error, timeout): retry


class LeaderElector:
    """See the module docstring. `leading` says whether the leader's work may run right now."""

    def __init__(self, leases: LeaseClient, election: Election, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.leases = leases
        self.election = election
        self.lead = lead
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="lease")

    @property
    def identity(self) -> str:
        return self.election.identity

    @property
    def leading(self) -> bool:
        return self.election.leading()

    async def run(self, stop: asyncio.Event) -> None:
        """Campaign, lead and renew until `stop` is set; then release the Lease if held. Never raises
        for API failures (they are retried)."""
        timing = self.election.timing
        try:
            while not stop.is_set():
                if await self._attempt(timing.renew_deadline) is Attempt.HELD:
                    await self._lead_while_renewing(stop)
                if not stop.is_set():
                    await _wait(stop, timing.retry_period)
        finally:
            await self._release()
            self._executor.shutdown(wait=False)

    async def _lead_while_renewing(self, stop: asyncio.Event) -> None:
        timing = self.election.timing
        log.info("leader election: %s acquired Lease %s/%s", self.identity, self.leases.namespace, self.leases.name)
        work = asyncio.create_task(self.lead(), name="leader-work")
        stopping = asyncio.create_task(stop.wait())
        why = "stopping"
        try:
            while True:
                await asyncio.wait(
                    [work, stopping],
                    timeout=min(timing.retry_period, self.election.renew_deadline_in()),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if stop.is_set():
                    break
                if work.done():
                    why = "the leader's work ended"
                    break
                remaining = self.election.renew_deadline_in()
                outcome = await self._attempt(remaining) if remaining > 0 else Attempt.FAILED
                if outcome is Attempt.TAKEN:
                    why = "another candidate holds the Lease"
                    break
                if not self.election.leading():
                    why = f"no renewal succeeded within {timing.renew_deadline:g}s"
                    break
        finally:
            self.election.stop_leading()
            work.cancel()
            stopping.cancel()
            await asyncio.gather(work, stopping, return_exceptions=True)
            if work.done() and not work.cancelled() and work.exception() is not None:
                log.error("leader election: the leader's work failed", exc_info=work.exception())
            log.info("leader election: %s stopped leading (%s)", self.identity, why)

    async def _attempt(self, timeout: float) -> Attempt:
        """One read and (if the Election says so) one write, within `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            read = await self._io(self.leases.read, deadline)
            record = self.election.plan(read.record if read is not None else None)
            if record is None:
                return Attempt.TAKEN
            if read is None:
                written = await self._io(lambda: self.leases.create(record), deadline)
            else:
                version = read.resource_version
                written = await self._io(lambda: self.leases.update(record, version), deadline)
        except (KubeError, TimeoutError) as exc:
            log.debug("leader election: attempt by %s failed: %s", self.identity, exc)
            return Attempt.FAILED
        self.election.written(written.record)
        return Attempt.HELD

    async def _io(self, call: Callable[[], T], deadline: float) -> T:
        loop = asyncio.get_running_loop()
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError("leader election: no time left for the Lease call")
        return await asyncio.wait_for(loop.run_in_executor(self._executor, call), remaining)

    async def _release(self) -> None:
        record = self.election.release()
        if record is None:
            return
        deadline = asyncio.get_running_loop().time() + self.election.timing.renew_deadline
        try:
            read = await self._io(self.leases.read, deadline)
            if read is not None and read.record.holder == self.identity:
                version = read.resource_version
                await self._io(lambda: self.leases.update(record, version), deadline)
                log.info("leader election: %s released the Lease", self.identity)
        except (KubeError, TimeoutError) as exc:
            log.warning("leader election: releasing the Lease failed (it expires by itself): %s", exc)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        pass
