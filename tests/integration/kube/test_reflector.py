"""kube.reflector.Reflector against the emulated API server over real HTTP: one LIST, watches that resume
from the last version seen (no object sent twice), a relist after 410 Gone, and deletions made while no
watch was open reported as DELETED with the object as last seen; the store it keeps (kube.watch_cache)
holds what the server holds after each."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kmock
import pytest

from devstack.kube.catalog import CLUSTERROLE, CLUSTERROLEBINDING
from devstack.kube.catalog import NODE as CORE_NODE
from devstack.kube.kubeconfig import write_kubeconfig
from devstack.kube.rbac import User, service_account_user
from devstack.kube.server import KubeApiServer
from kube.client import KubeClient
from kube.reflector import MAX_FORBIDDEN_PAUSE_SECONDS, Reflector
from kube.resources import NODE
from kube.types import Obj
from kube.watch_cache import Store

DEADLINE_SECONDS = 15.0


def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class CountingWatches:
    """Delegates to a KubeClient, counting watches opened."""

    def __init__(self, inner: KubeClient) -> None:
        self.inner = inner
        self.watches = 0

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, Obj]]:
        self.watches += 1
        return self.inner.watch(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.syncs = 0

    def handle(self, event_type: str, obj: Obj) -> None:
        self.events.append((event_type, obj["metadata"]["name"]))

    def synced(self) -> None:
        self.syncs += 1


def role(name: str, rules: list[Obj]) -> Obj:
    return {"metadata": {"name": name}, "rules": rules}


def binding(name: str, user: User) -> Obj:
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    return {"metadata": {"name": name}, "roleRef": ref, "subjects": [{"kind": "User", "name": user.name}]}


def node(name: str) -> Obj:
    return {"metadata": {"name": name}, "spec": {"providerID": f"aws:///us-west-2a/i-{name}"}}


@pytest.fixture
def running() -> Iterator[Callable[[Reflector], threading.Event]]:
    """Starts a reflector's `run` in a thread; stops and joins every one at the end."""
    started: list[tuple[threading.Thread, threading.Event]] = []

    def start(reflector: Reflector) -> threading.Event:
        stop = threading.Event()
        thread = threading.Thread(target=reflector.run, args=(stop,), daemon=True)
        thread.start()
        started.append((thread, stop))
        return stop

    yield start
    for thread, stop in started:
        stop.set()
        thread.join(timeout=DEADLINE_SECONDS)  # its watch ends at its 1 s timeout


def test_lists_once_and_resumes_each_watch_where_the_last_ended(
    kube: KubeClient, running: Callable[[Reflector], threading.Event]
) -> None:
    kube.create(NODE, node("a"))
    kube.create(NODE, node("b"))
    counting, seen, store = CountingWatches(kube), Recorder(), Store(NODE)
    reflector = Reflector(counting, NODE, seen.handle, seen.synced, watch_seconds=1, store=store)  # type: ignore[arg-type]
    running(reflector)
    eventually(lambda: seen.syncs == 1, "the first list")
    assert seen.events == [("ADDED", "a"), ("ADDED", "b")]
    assert [n["metadata"]["name"] for n in store.list()] == ["a", "b"]
    kube.create(NODE, node("c"))
    kube.patch(NODE, "c", {"spec": {"unschedulable": True}})
    kube.delete(NODE, "a")
    eventually(lambda: counting.watches >= 3, "two watches ended at their timeout and resumed")
    eventually(lambda: len(seen.events) == 5, "the changes")
    assert seen.events[2:] == [("ADDED", "c"), ("MODIFIED", "c"), ("DELETED", "a")]
    assert (reflector.lists, seen.syncs) == (1, 1), "a watch that ended was resumed, not listed again"
    assert store.list() == kube.list(NODE)
    assert [n["metadata"]["name"] for n in store.list()] == ["b", "c"]
    assert store.list()[1]["spec"]["unschedulable"] is True


def test_after_410_gone_it_lists_again(
    kube: KubeClient, api_server: KubeApiServer, running: Callable[[Reflector], threading.Event]
) -> None:
    kube.create(NODE, node("d"))
    seen = Recorder()
    reflector = Reflector(kube, NODE, seen.handle, seen.synced, watch_seconds=1)

    def refuse_next_watch() -> None:
        watches = api_server.emulator[kmock.action.WATCH, kmock.resource("v1/nodes")]
        count = len(watches)
        watches[count + 1 : count + 2] << 410  # the first watch runs; the one resuming after it is refused

    api_server.call(refuse_next_watch)
    running(reflector)
    eventually(lambda: seen.syncs == 2, "a second list")
    assert seen.events.count(("ADDED", "d")) == 2  # listed, refused, listed again
    assert reflector.lists == 2


def test_a_relist_reports_what_was_deleted_while_no_watch_was_open(kube: KubeClient) -> None:
    for name in ("e", "f"):
        kube.create(NODE, node(name))
    seen = Recorder()
    deleted: list[Obj] = []

    def handle(event_type: str, obj: Obj) -> None:
        seen.handle(event_type, obj)
        if event_type == "DELETED":
            deleted.append(obj)

    store = Store(NODE)
    reflector = Reflector(kube, NODE, handle, seen.synced, watch_seconds=1, store=store)
    stop = threading.Event()
    first = threading.Thread(target=reflector.run, args=(stop,), daemon=True)
    first.start()
    eventually(lambda: seen.syncs == 1, "the first list")
    [last_seen] = [n for n in kube.list(NODE) if n["metadata"]["name"] == "e"]
    stop.set()
    first.join(timeout=DEADLINE_SECONDS)  # its watch ends at its 1 s timeout
    kube.delete(NODE, "e")
    stop = threading.Event()
    second = threading.Thread(target=reflector.run, args=(stop,), daemon=True)
    second.start()  # the same reflector listing again, as after a failure
    try:
        eventually(lambda: seen.syncs == 2, "a second list")
    finally:
        stop.set()
        second.join(timeout=DEADLINE_SECONDS)
    assert [obj["metadata"]["name"] for obj in deleted] == ["e"]
    assert deleted[0] == last_seen, "the DELETED object is the object as the reflector last saw it"
    assert deleted[0]["spec"]["providerID"] == "aws:///us-west-2a/i-e"
    assert [n["metadata"]["name"] for n in store.list()] == [n["metadata"]["name"] for n in kube.list(NODE)]
    assert "e" not in [n["metadata"]["name"] for n in store.list()]


def test_an_object_the_consumer_cannot_handle_is_logged_and_the_others_go_on(
    kube: KubeClient, running: Callable[[Reflector], threading.Event]
) -> None:
    kube.create(NODE, node("h-bad"))
    kube.create(NODE, node("h-good"))
    seen = Recorder()

    def handle(event_type: str, obj: Obj) -> None:
        if obj["metadata"]["name"] == "h-bad":
            raise ValueError("cannot handle this one")
        seen.handle(event_type, obj)

    reflector = Reflector(kube, NODE, handle, seen.synced, watch_seconds=1)
    running(reflector)
    eventually(lambda: seen.syncs == 1, "the first list")
    kube.create(NODE, node("h-later"))
    eventually(lambda: ("ADDED", "h-later") in seen.events, "the next event")
    assert ("ADDED", "h-good") in seen.events
    assert reflector.lists == 1, "a failing consumer does not make it list again"


def test_a_refused_watch_backs_off_with_one_line_naming_the_missing_verb_until_it_is_granted(
    running: Callable[[Reflector], threading.Event], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As client-go's reflector: a 403 is retried after a pause that doubles (capped), each refusal logged
    as one line without a traceback that quotes the server's reason; granting the verb ends it."""
    reader = service_account_user("nodeflow", "nodeflow")
    with KubeApiServer(controllers=False, tokens={"reader": reader}) as server:
        grant_list_only = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}
        server.call(lambda: server.emulator.store.create(CLUSTERROLE, None, role("reader", [grant_list_only])))
        server.call(lambda: server.emulator.store.create(CLUSTERROLEBINDING, None, binding("reader", reader)))
        write_kubeconfig(tmp_path / "config", server.url, token="reader")
        seen = Recorder()
        reflector = Reflector(KubeClient.from_kubeconfig(str(tmp_path / "config")), NODE, seen.handle,
                              seen.synced, watch_seconds=1, retry_pause=0.01)  # fmt: skip
        with caplog.at_level(logging.ERROR, logger="kube.reflector"):
            running(reflector)
            eventually(lambda: reflector.refusals >= 3, "three refused watches")
        refused = [r for r in caplog.records if "refused" in r.getMessage()]
        assert refused and all(r.exc_info is None for r in refused)
        assert 'cannot watch resource "nodes" in API group "" at the cluster scope' in refused[0].getMessage()
        pauses = Reflector(reflector.kube, NODE, seen.handle, retry_pause=1.0)
        expected = {0: 1.0, 1: 2.0, 2: 4.0, 6: MAX_FORBIDDEN_PAUSE_SECONDS, 100: MAX_FORBIDDEN_PAUSE_SECONDS}
        for refusals, pause in expected.items():
            pauses.refusals = refusals
            assert pauses.forbidden_pause() == pause
        grant_watch = {**grant_list_only, "verbs": ["list", "watch"]}
        server.call(lambda: server.emulator.store.update(CLUSTERROLE, None, "reader", role("reader", [grant_watch])))
        server.call(lambda: server.emulator.store.create(CORE_NODE, None, node("watched")))
        eventually(lambda: ("ADDED", "watched") in seen.events, "the node, once the watch is granted")
        eventually(lambda: reflector.refusals == 0, "a watch that ended at its timeout, not refused")
