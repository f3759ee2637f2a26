"""`ChangeFeed` with `cache`: the local stack's loops read objects from their watches, against the emulator."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devstack.kube.server import KubeApiServer
from devstack.wakeup import ChangeFeed
from kube.client import GoneError, KubeClient
from kube.resources import NODE
from kube.types import Obj
from tests.devstack.counting import CountingKube
from tests.eventually import eventually


@pytest.fixture(scope="module")
def kube(api_server: KubeApiServer) -> Iterator[KubeClient]:
    client = KubeClient.for_url(api_server.url)
    yield client
    client.close()


@pytest.fixture
def prefix() -> str:
    return f"n-{uuid.uuid4().hex[:8]}"


def node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


class WatchCountingKube(CountingKube):
    """Counts `watch` calls too."""

    def __init__(self, inner: KubeClient) -> None:
        super().__init__(inner)
        self.watches = 0

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, Obj]]:
        self.watches += 1
        return self._inner.watch(*args, **kwargs)  # type: ignore[no-any-return]


def kept(feed: ChangeFeed, name: str) -> Obj | None:
    return next((o for o in feed.objects(NODE) or [] if o["metadata"]["name"] == name), None)


def names(feed: ChangeFeed, prefix: str) -> list[str] | None:
    objects = feed.objects(NODE)
    return (
        None
        if objects is None
        else [o["metadata"]["name"] for o in objects if o["metadata"]["name"].startswith(prefix)]
    )


@pytest.fixture
def running(kube: KubeClient) -> Iterator[tuple[ChangeFeed, WatchCountingKube]]:
    counting = WatchCountingKube(kube)
    feed = ChangeFeed(counting, [NODE], name="test", watch_seconds=1, cache=True)  # type: ignore[arg-type]
    stop = threading.Event()
    assert feed.objects(NODE) is None  # nothing before the first listing
    feed.start(stop)
    yield feed, counting
    stop.set()


def test_objects_follow_creates_updates_and_deletes_without_more_lists(
    kube: KubeClient, running: tuple[ChangeFeed, WatchCountingKube], prefix: str
) -> None:
    feed, counting = running
    kube.create(NODE, node(f"{prefix}-a"))
    eventually(lambda: names(feed, prefix) == [f"{prefix}-a"], what="the node listed or watched")
    kube.create(NODE, node(f"{prefix}-b"))
    kube.patch(NODE, f"{prefix}-a", {"metadata": {"labels": {"zone": "b"}}})
    kube.delete(NODE, f"{prefix}-b")

    def labelled() -> bool:
        a = kept(feed, f"{prefix}-a")
        return kept(feed, f"{prefix}-b") is None and a is not None and a["metadata"].get("labels") == {"zone": "b"}

    eventually(labelled, what="the watch's events applied")
    # Watches of 1 s end and resume from their resourceVersion: one LIST in all.
    eventually(lambda: counting.watches >= 1, what="the first watch")
    watches = counting.watches
    eventually(lambda: counting.watches > watches, timeout=5, what="the next watch")
    kube.create(NODE, node(f"{prefix}-c"))
    eventually(lambda: kept(feed, f"{prefix}-c"), timeout=5, what="a node created during a later watch")
    assert counting.lists == {"nodes": 1}
    kube.delete(NODE, f"{prefix}-a")
    kube.delete(NODE, f"{prefix}-c")


def test_what_a_write_returned_is_kept_until_a_newer_event(
    kube: KubeClient, running: tuple[ChangeFeed, WatchCountingKube], prefix: str
) -> None:
    feed, _ = running
    created = kube.create(NODE, node(f"{prefix}-a"))
    eventually(lambda: names(feed, prefix) == [f"{prefix}-a"], what="the node seen")
    assumed = {**created, "spec": {"unschedulable": True}}  # what a loop assumes it wrote
    feed.remember(NODE, assumed)
    assert (kept(feed, f"{prefix}-a") or {})["spec"] == {"unschedulable": True}
    kube.patch(NODE, f"{prefix}-a", {"metadata": {"labels": {"x": "y"}}})  # a newer version replaces it

    eventually(
        lambda: (kept(feed, f"{prefix}-a") or {}).get("metadata", {}).get("labels") == {"x": "y"},
        what="the newer event applied",
    )
    feed.forget(NODE, created)
    assert f"{prefix}-a" not in (names(feed, prefix) or [])
    kube.delete(NODE, f"{prefix}-a")


def test_objects_are_copies_at_the_top_level(
    kube: KubeClient, running: tuple[ChangeFeed, WatchCountingKube], prefix: str
) -> None:
    feed, _ = running
    kube.create(NODE, node(f"{prefix}-a"))
    eventually(lambda: names(feed, prefix) == [f"{prefix}-a"], what="the node seen")
    first = kept(feed, f"{prefix}-a")
    assert first is not None
    first["spec"] = {"changed": True}
    assert (kept(feed, f"{prefix}-a") or {}).get("spec") != {"changed": True}
    kube.delete(NODE, f"{prefix}-a")


class GoneOnceKube(WatchCountingKube):
    """The second watch finds its resourceVersion compacted away (410 Gone), after a Node was deleted while
    no watch ran: only a fresh LIST can tell the feed it is gone."""

    def __init__(self, inner: KubeClient, missed: str) -> None:
        super().__init__(inner)
        self.missed = missed

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, Obj]]:
        self.watches += 1
        if self.watches == 2:
            self._inner.delete(NODE, self.missed)
            raise GoneError("resourceVersion too old")
        return self._inner.watch(*args, **kwargs)  # type: ignore[no-any-return]


def test_a_watch_that_is_gone_lists_again_and_drops_what_it_missed(kube: KubeClient, prefix: str) -> None:
    kube.create(NODE, node(f"{prefix}-a"))
    kube.create(NODE, node(f"{prefix}-b"))
    gone = GoneOnceKube(kube, f"{prefix}-a")
    feed = ChangeFeed(gone, [NODE], name="test", watch_seconds=1, cache=True)  # type: ignore[arg-type]
    stop = threading.Event()
    feed.start(stop)
    try:
        eventually(lambda: names(feed, prefix) == [f"{prefix}-a", f"{prefix}-b"], what="the first listing")
        eventually(lambda: gone.lists["nodes"] == 2, timeout=5, what="the listing after 410 Gone")
        eventually(lambda: names(feed, prefix) == [f"{prefix}-b"], what="the missed deletion seen")
    finally:
        stop.set()
    kube.delete(NODE, f"{prefix}-b")
