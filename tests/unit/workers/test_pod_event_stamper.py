"""workers.watchers.PodEventStamper: pod events stamp the right NodeClaim's status.lastPodEventTime, through
activities.nodeclaim.ownership (MemKube refuses unguarded writes), deduped, best effort."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kube import resources as r
from kube.client import GoneError
from kube.errors import ServerError
from kube.fake import MemKube
from kube.watch_cache import WATCHED, WatchCache
from tests.unit.scheduling.test_pod_events import pod
from workers import watchers
from workers.watchers import PodEventStamper, PodWatcher

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = NOW
        self.seconds = 0.0

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
        self.seconds += seconds


def claim(name: str, node: str = "", provider_id: str = "", stamp: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {}
    if node:
        status["nodeName"] = node
    if provider_id:
        status["providerID"] = provider_id
    if stamp:
        status["lastPodEventTime"] = stamp
    return {"metadata": {"name": name}, "spec": {}, "status": status}


class CountingKube(MemKube):
    def __init__(self) -> None:
        super().__init__()
        self.lists = 0
        self.fail_lists = False

    def list(self, resource: r.Resource, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        if resource is r.NODECLAIM:
            self.lists += 1
            if self.fail_lists:
                raise ServerError("503")
        return super().list(resource, *args, **kwargs)


@pytest.fixture
def kube() -> CountingKube:
    kube = CountingKube()
    kube.create(r.NODECLAIM, claim("default-a", node="node-1"))
    kube.create(r.NODECLAIM, claim("default-b", provider_id="aws:///us-west-2a/i-b"))  # nodeName not yet set
    kube.create(r.NODE, {"metadata": {"name": "node-2"}, "spec": {"providerID": "aws:///us-west-2a/i-b"}})
    kube.create(r.NODE, {"metadata": {"name": "system-1"}, "spec": {"providerID": "aws:///us-west-2a/i-sys"}})
    return kube


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def stamper(kube: CountingKube, clock: Clock) -> PodEventStamper:
    return PodEventStamper(kube, clock=lambda: clock.now, monotonic=lambda: clock.seconds)


def stamp_of(kube: MemKube, name: str) -> str | None:
    return kube.get(r.NODECLAIM, name)["status"].get("lastPodEventTime")


def test_a_bound_pod_stamps_its_nodes_claim_by_node_name_or_provider_id(
    stamper: PodEventStamper, kube: CountingKube
) -> None:
    stamper.observe("ADDED", pod("web", node="node-1"))
    stamper.observe("ADDED", pod("api", node="node-2"))
    stamper.observe("ADDED", pod("dns", node="system-1"))  # no NodeClaim: not Karpenter's
    assert stamper.flush() == 2
    assert stamp_of(kube, "default-a") == stamp_of(kube, "default-b") == "2026-01-05T11:00:00Z"
    assert stamper.pending() == {}


def test_stamps_within_ten_seconds_and_older_ones_are_not_written(
    stamper: PodEventStamper, kube: CountingKube, clock: Clock
) -> None:
    stamper.observe("ADDED", pod("web"))
    stamper.flush()
    clock.advance(5)  # 12:00:05: an hour after the bind the first stamp recorded
    stamper.observe("DELETED", pod("web"))
    assert stamper.flush() == 1
    assert stamp_of(kube, "default-a") == "2026-01-05T12:00:05Z"
    version = kube.get(r.NODECLAIM, "default-a")["metadata"]["resourceVersion"]
    clock.advance(5)
    stamper.observe("ADDED", pod("api", phase="Running"))  # bound at 11:00: older than the stamp
    stamper.observe("DELETED", pod("api"))  # now, 5 s after the last stamp: deduped
    assert stamper.flush() == 0
    assert kube.get(r.NODECLAIM, "default-a")["metadata"]["resourceVersion"] == version
    clock.advance(10)
    stamper.observe("MODIFIED", pod("job", phase="Running"))
    stamper.observe("MODIFIED", pod("job", phase="Succeeded"))
    assert stamper.flush() == 1
    assert stamp_of(kube, "default-a") == "2026-01-05T12:00:20Z"


def test_a_claim_of_the_same_name_with_another_uid_is_not_stamped(
    stamper: PodEventStamper, kube: CountingKube, clock: Clock
) -> None:
    stamper.observe("ADDED", pod("web"))
    stamper.flush()  # indexes default-a by its uid
    with kube.as_admin():
        kube.delete(r.NODECLAIM, "default-a")
    kube.create(r.NODECLAIM, claim("default-a", node="node-9"))  # a new claim, same name, another node
    before = kube.get(r.NODECLAIM, "default-a")
    clock.advance(60)
    stamper.observe("DELETED", pod("web"))
    assert stamper.flush() == 0
    assert kube.get(r.NODECLAIM, "default-a") == before
    stamper.observe("ADDED", pod("api", node="node-9", status={"conditions": []}))
    assert stamper.flush() == 1  # relisted: node-9's claim is the new default-a


def test_a_failed_list_keeps_the_stamps_and_the_watcher_goes_on(stamper: PodEventStamper, kube: CountingKube) -> None:
    kube.fail_lists = True
    stamper.observe("ADDED", pod("web"))
    assert stamper.flush() == 0
    assert stamper.pending() == {"node-1": datetime(2026, 1, 5, 11, 0, tzinfo=UTC)}
    kube.fail_lists = False
    assert stamper.flush() == 1


def test_nodes_without_a_claim_are_remembered_and_the_index_is_relisted_only_when_stale(
    stamper: PodEventStamper, kube: CountingKube, clock: Clock
) -> None:
    for second in range(5):
        clock.advance(1)
        stamper.observe("ADDED", pod(f"dns-{second}", node="system-1"))
        stamper.observe("ADDED", pod(f"web-{second}", node="node-1"))
        stamper.flush()
    assert kube.lists == 1
    clock.advance(watchers.CLAIM_INDEX_SECONDS + 1)
    stamper.observe("ADDED", pod("dns-late", node="system-1"))
    stamper.flush()
    assert kube.lists == 2


def test_once_the_leaders_watches_have_listed_the_index_is_read_from_its_cache(
    kube: CountingKube, clock: Clock
) -> None:
    cache = WatchCache(WATCHED)
    stamper = PodEventStamper(kube, clock=lambda: clock.now, monotonic=lambda: clock.seconds, cache=lambda: cache)
    stamper.observe("ADDED", pod("web", node="node-1"))
    assert stamper.flush() == 1
    assert kube.lists == 1, "not synced yet: the API is listed"
    kube.create(r.NODECLAIM, claim("default-c", node="node-3"))
    for resource in WATCHED:  # what the leader's watches list
        store = cache.store(resource)
        assert store is not None
        for obj in MemKube.list(kube, resource):
            store.apply("ADDED", obj)
        store.mark_synced()
    lists = kube.lists
    clock.advance(60)
    stamper.observe("ADDED", pod("api", node="node-3", status={"conditions": []}))  # a node new to the index
    assert stamper.flush() == 1
    assert kube.lists == lists, "the index was rebuilt from the cache"
    assert stamp_of(kube, "default-c") is not None


def test_the_pod_watcher_feeds_both_consumers_from_one_watch(kube: CountingKube) -> None:
    loop = asyncio.new_event_loop()
    try:
        watcher = PodWatcher(kube, None, loop)  # type: ignore[arg-type]
        watcher._on_event("ADDED", pod("web"))
        assert watcher.pod_events.pending() == {"node-1": datetime(2026, 1, 5, 11, 0, tzinfo=UTC)}
        assert watcher.pod_events.flush() == 1
    finally:
        loop.close()


class RelistingKube(CountingKube):
    """Serves scripted pod lists, one per LIST; each watch after a list sends nothing and ends with 410
    Gone (the reflector lists again), and the last list's watch sets `stop`."""

    def __init__(self, lists: list[list[dict[str, Any]]], stop: threading.Event) -> None:
        super().__init__()
        self.pod_lists = lists
        self.stop = stop

    def list_with_version(self, resource: r.Resource, *args: Any, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        return self.pod_lists.pop(0), "7"

    def watch(self, resource: r.Resource, **kwargs: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        if not self.pod_lists:
            self.stop.set()
            return
        yield from ()
        raise GoneError("too old resource version")


def test_a_pod_deleted_while_no_watch_was_open_stamps_its_node() -> None:
    stop = threading.Event()
    first = [pod("web", node="node-1"), pod("api", node="node-2")]
    second = [pod("web", node="node-1")]  # "api" was deleted while no watch was open
    kube = RelistingKube([first, second], stop)
    loop = asyncio.new_event_loop()
    try:
        watcher = PodWatcher(kube, None, loop)  # type: ignore[arg-type]
        later = NOW + timedelta(seconds=20)
        moments = iter([NOW, NOW, later, later])  # two pods listed, then "api" gone and "web" listed again
        watcher.pod_events.clock = lambda: next(moments)
        watcher._reflect(r.POD, watcher._on_event, stop)
    finally:
        loop.close()
    bound = datetime(2026, 1, 5, 11, 0, tzinfo=UTC)
    assert watcher.pod_events.pending() == {"node-1": bound, "node-2": later}


def test_pending_pods_signal_at_once_when_new_and_every_resignal_period_while_pending(kube: CountingKube) -> None:
    clock = Clock()
    loop = asyncio.new_event_loop()
    try:
        watcher = PodWatcher(kube, None, loop, monotonic=lambda: clock.seconds)  # type: ignore[arg-type]
        assert watcher.due() == 0
        unschedulable = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}  # fmt: skip
        watcher._on_event("ADDED", pod("a", node="", status=unschedulable))
        watcher._on_event("ADDED", pod("b", node="", status=unschedulable))
        assert watcher.due() == 2
        clock.advance(1)
        watcher._on_event("MODIFIED", pod("a", node="", status=unschedulable))  # still pending: no news
        assert watcher.due() == 0
        watcher._on_event("ADDED", pod("c", node="", status=unschedulable))
        assert watcher.due() == 3
        watcher._on_event("MODIFIED", pod("a", node="node-1"))  # bound
        watcher._on_event("DELETED", pod("b", node="", status=unschedulable))
        clock.advance(watchers.RESIGNAL_SECONDS - 1)
        assert watcher.due() == 0
        clock.advance(1)
        assert watcher.due() == 1  # "c" is still pending: the nudge that retries a failed launch
        watcher._on_event("MODIFIED", pod("c", node="node-2"))
        clock.advance(watchers.RESIGNAL_SECONDS)
        assert watcher.due() == 0
    finally:
        loop.close()
