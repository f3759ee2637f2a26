"""Leader election's timing and decisions, without I/O: what one candidate writes to the Lease and
whether it may act as the leader, with the clocks injected. `workers.leadership` does the I/O.

The semantics are those of client-go's leaderelection package:
- A Lease held by another candidate is taken only once it expired *as this candidate observed it*: its
  record has not changed for its `leaseDurationSeconds` by this process's monotonic clock. The
  holder's renewTime is never compared with this process's wall clock, so clock skew between
  replicas cannot make two leaders. A released Lease (empty holder) is taken at once.
- The leader renews every `retry_period`; it stops acting as the leader once `renew_deadline` passed
  since the start of its last successful write, or at once when a read shows another holder. As
  `renew_deadline` < `lease_duration`, it has stopped before any other candidate can take the Lease.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from kube.leases import LeaseRecord

JITTER_FACTOR = 1.2  # client-go's: the renew deadline must outlast this many retry periods


@dataclass(frozen=True)
class Timing:
    """client-go's defaults, which Karpenter keeps: a failover takes at most `lease_duration` seconds
    after the leader's last renewal (sooner when the leader releases the Lease as it stops)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > JITTER_FACTOR * self.retry_period > 0:
            raise ValueError(
                f"leader election timing {self}: need lease_duration > renew_deadline > "
                f"{JITTER_FACTOR} x retry_period > 0"
            )

    @property
    def lease_duration_seconds(self) -> int:
        return max(1, round(self.lease_duration))


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Election:
    """One candidate's view of the Lease. Call `plan` with each record read, write what it returns,
    then report the outcome with `written` (success) or nothing (failure); `leading()` says whether
    the candidate may act as the leader now. Not thread-safe: one caller."""

    def __init__(
        self,
        identity: str,
        timing: Timing = Timing(),
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = _utc_now,
    ) -> None:
        if not identity:
            raise ValueError("a leader election candidate needs a non-empty identity")
        self.identity = identity
        self.timing = timing
        self.clock = clock
        self.wall = wall
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._attempt_at = 0.0
        self._renewed_at: float | None = None  # start of the last successful write as the holder

    def plan(self, current: LeaseRecord | None) -> LeaseRecord | None:
        """The record to write given the Lease just read (None: there is no Lease, create it), or None
        when another candidate holds it and it has not expired. A record naming another holder ends
        this candidate's leadership at once."""
        now = self.clock()
        self._attempt_at = now
        if current is None:
            stamp = self.wall()
            return LeaseRecord(self.identity, self.timing.lease_duration_seconds, stamp, stamp, 0)
        if current != self._observed:
            self._observed, self._observed_at = current, now
        mine = current.holder == self.identity
        if not mine:
            self._renewed_at = None
            if current.holder and now < self._observed_at + current.lease_duration_seconds:
                return None
        stamp = self.wall()
        if mine:
            return replace(current, lease_duration_seconds=self.timing.lease_duration_seconds, renew_time=stamp)
        return LeaseRecord(self.identity, self.timing.lease_duration_seconds, stamp, stamp, current.transitions + 1)

    def written(self, record: LeaseRecord) -> None:
        """The record returned by the last `plan` was written (the API server's copy of it)."""
        self._observed, self._observed_at = record, self.clock()
        self._renewed_at = self._attempt_at if record.holder == self.identity else None

    def leading(self) -> bool:
        """This candidate holds the Lease and its renew deadline has not passed."""
        return self._renewed_at is not None and self.clock() < self._renewed_at + self.timing.renew_deadline

    def renew_deadline_in(self) -> float:
        """Seconds until this candidate must stop acting as the leader (0 when it is not leading)."""
        if self._renewed_at is None:
            return 0.0
        return max(0.0, self._renewed_at + self.timing.renew_deadline - self.clock())

    def stop_leading(self) -> None:
        """Leadership was given up (lost, or the leader's work ended): `leading()` is False from now."""
        self._renewed_at = None

    def release(self) -> LeaseRecord | None:
        """The record handing the Lease back (empty holder, as client-go's ReleaseOnCancel writes), or
        None when this candidate did not hold it at its last write or read."""
        if self._observed is None or self._observed.holder != self.identity:
            return None
        stamp = self.wall()
        return LeaseRecord("", 1, stamp, stamp, self._observed.transitions)


def candidate_identity(hostname: str, suffix: str) -> str:
    """The holderIdentity of one worker process: its pod's name (HOSTNAME) and a random suffix, so a
    restarted container is a new candidate, as controller-runtime names them."""
    return f"{hostname or 'nodeflow'}_{suffix}"
