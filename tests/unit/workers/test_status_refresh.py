"""The leader's status refresh asks the provisioner for a round only when pods are pending or it failed
(activities.provisioning.status_refresh)."""

from __future__ import annotations

import threading

from activities.provisioning.status_refresh import StatusRefresh


class Leader:
    def __init__(self, pending: int = 0, refresh_fails: bool = False, ask_fails: bool = False) -> None:
        self.pending = pending
        self.refresh_fails = refresh_fails
        self.ask_fails = ask_fails
        self.refreshed = 0
        self.asked: list[int] = []

    def refresh(self) -> None:
        self.refreshed += 1
        if self.refresh_fails:
            raise RuntimeError("the API server is down")

    def pending_pods(self) -> int:
        return self.pending

    def ask_round(self, count: int) -> None:
        if self.ask_fails:
            raise RuntimeError("Temporal unreachable")
        self.asked.append(count)

    def refresher(self, interval: float = 60.0) -> StatusRefresh:
        return StatusRefresh(self.refresh, self.pending_pods, self.ask_round, interval=interval)


def test_an_idle_cluster_is_refreshed_without_a_provisioning_round() -> None:
    leader = Leader()
    refresher = leader.refresher()
    assert [refresher.once() for _ in range(3)] == [False, False, False]
    assert (leader.refreshed, leader.asked) == (3, [])


def test_pending_pods_ask_for_a_round_with_their_count() -> None:
    leader = Leader(pending=4)
    assert leader.refresher().once()
    assert leader.asked == [4]


def test_a_failed_refresh_leaves_it_to_a_provisioning_round() -> None:
    leader = Leader(pending=4, refresh_fails=True)
    assert leader.refresher().once()
    assert leader.asked == [0]


def test_a_failed_signal_does_not_stop_the_refresh() -> None:
    leader = Leader(pending=1, ask_fails=True)
    refresher = leader.refresher()
    assert refresher.once() and refresher.once()
    assert leader.refreshed == 2


def test_run_refreshes_every_interval_until_stopped() -> None:
    stop = threading.Event()
    leader = Leader()

    def refresh_then_stop() -> None:
        leader.refreshed += 1
        if leader.refreshed == 2:
            stop.set()

    StatusRefresh(refresh_then_stop, leader.pending_pods, leader.ask_round, interval=0.01).run(stop)
    assert leader.refreshed == 2
