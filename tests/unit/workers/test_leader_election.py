"""workers.leader_election: who may take the Lease when, and when a leader must stop, on fake clocks."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kube.leases import LeaseRecord
from workers.leader_election import Election, Timing, candidate_identity

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    """A monotonic clock and a wall clock that only move when told (and can disagree)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.wall_now = T0

    def __call__(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return self.wall_now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.wall_now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def election(clock: Clock, identity: str) -> Election:
    return Election(identity, Timing(), clock=clock, wall=clock.wall)


def take(e: Election, current: LeaseRecord | None) -> LeaseRecord:
    """Plan and report the write as successful; the record written."""
    record = e.plan(current)
    assert record is not None
    e.written(record)
    return record


def test_no_lease_is_created_with_this_candidate_as_holder(clock: Clock) -> None:
    a = election(clock, "a")
    record = a.plan(None)
    assert record == LeaseRecord("a", 15, T0, T0, 0)
    assert not a.leading()  # not before the write succeeded
    a.written(record)
    assert a.leading()


def test_a_held_lease_is_left_alone_until_it_expired_as_observed(clock: Clock) -> None:
    held = take(election(clock, "a"), None)
    b = election(clock, "b")
    assert b.plan(held) is None
    clock.advance(14.9)
    assert b.plan(held) is None
    clock.advance(0.2)
    taken = b.plan(held)
    assert taken is not None and (taken.holder, taken.transitions, taken.acquire_time) == ("b", 1, clock.wall_now)


def test_expiry_counts_from_when_this_candidate_saw_the_record_change_not_from_its_renew_time(clock: Clock) -> None:
    # The holder's wall clock is an hour behind: its renewTime looks long expired, yet it renews.
    a, b = election(clock, "a"), election(clock, "b")
    held = replace(take(a, None), renew_time=T0 - timedelta(hours=1))
    assert b.plan(held) is None
    clock.advance(10)
    renewed = replace(held, renew_time=held.renew_time + timedelta(seconds=10))  # type: ignore[operator]
    assert b.plan(renewed) is None  # a change: the 15 s start again
    clock.advance(14)
    assert b.plan(renewed) is None


def test_a_released_lease_is_taken_at_once(clock: Clock) -> None:
    a, b = election(clock, "a"), election(clock, "b")
    held = take(a, None)
    released = a.release()
    assert released is not None and released.holder == "" and released.transitions == held.transitions
    taken = b.plan(released)
    assert taken is not None and taken.holder == "b"


def test_the_holder_renews_keeping_acquire_time_and_transitions(clock: Clock) -> None:
    a = election(clock, "a")
    held = take(a, None)
    clock.advance(2)
    renewed = a.plan(held)
    assert renewed == replace(held, renew_time=T0 + timedelta(seconds=2))


def test_the_leader_stops_at_the_renew_deadline_from_its_last_successful_write(clock: Clock) -> None:
    a = election(clock, "a")
    held = take(a, None)
    clock.advance(2)
    a.plan(held)  # the renewal starts at t+2 but its write never succeeds
    clock.advance(7.9)
    assert a.leading() and a.renew_deadline_in() == pytest.approx(0.1)
    clock.advance(0.1)
    assert not a.leading() and a.renew_deadline_in() == 0


def test_the_deadline_counts_from_the_start_of_the_write_not_its_end(clock: Clock) -> None:
    a = election(clock, "a")
    record = a.plan(None)
    assert record is not None
    clock.advance(3)  # a slow API server
    a.written(record)
    assert a.renew_deadline_in() == pytest.approx(7)


def test_seeing_another_holder_ends_leadership_at_once(clock: Clock) -> None:
    a = election(clock, "a")
    held = take(a, None)
    assert a.plan(replace(held, holder="b")) is None
    assert not a.leading()
    assert a.release() is None  # not ours to release


def test_the_old_leader_stops_before_anyone_else_can_take_over(clock: Clock) -> None:
    a, b = election(clock, "a"), election(clock, "b")
    held = take(a, None)
    assert b.plan(held) is None
    stopped_at = takeover_at = None
    for _ in range(200):
        clock.advance(0.1)
        if stopped_at is None and not a.leading():
            stopped_at = clock.now
        if takeover_at is None and b.plan(held) is not None:
            takeover_at = clock.now
    assert stopped_at is not None and takeover_at is not None
    assert stopped_at < takeover_at <= stopped_at + 5.1


def test_a_lease_written_by_hand_without_duration_is_expired(clock: Clock) -> None:
    b = election(clock, "b")
    taken = b.plan(LeaseRecord("someone", 0))
    assert taken is not None and taken.holder == "b"


def test_timing_must_leave_the_leader_time_to_stop() -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline"):
        Timing(lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError):
        Timing(renew_deadline=2, retry_period=2)


def test_identity_is_the_pod_name_and_a_suffix() -> None:
    assert candidate_identity("nodeflow-7d9f-abcde", "1a2b3c4d") == "nodeflow-7d9f-abcde_1a2b3c4d"
    assert candidate_identity("", "x") == "nodeflow_x"
    with pytest.raises(ValueError):
        Election("")
