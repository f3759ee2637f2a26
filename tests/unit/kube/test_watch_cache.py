"""kube.watch_cache: a store follows the events handed to it, refuses reads before its first LIST, keeps
objects without managedFields, and a cache is synced only when every store is and counts every event its
stores took."""

from __future__ import annotations

import json

import pytest

from kube import resources as r
from kube.types import Obj
from kube.watch_cache import NotSyncedError, Store, WatchCache


def pod(name: str, namespace: str = "default", **meta: object) -> Obj:
    return {"metadata": {"name": name, "namespace": namespace, **meta}, "spec": {}}


def test_a_store_follows_added_modified_and_deleted_and_lists_sorted() -> None:
    store = Store(r.POD)
    store.apply("ADDED", pod("b"))
    store.apply("ADDED", pod("a", "other"))
    store.apply("ADDED", pod("a"))
    store.apply("MODIFIED", {**pod("b"), "spec": {"nodeName": "n-1"}})
    store.apply("BOOKMARK", pod("z"))
    store.apply("DELETED", {"metadata": {"name": "a", "namespace": "other"}})
    assert [o["metadata"]["name"] for o in store.missing_from({"default/a"})] == ["b"], "readable before sync"
    store.mark_synced()
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in store.list()] == [
        ("default", "a"),
        ("default", "b"),
    ]
    assert store.list()[1]["spec"] == {"nodeName": "n-1"}
    assert len(store) == 2


def test_a_store_refuses_reads_until_its_first_list_was_handed_over() -> None:
    store = Store(r.NODE)
    store.apply("ADDED", pod("n-1", ""))
    with pytest.raises(NotSyncedError, match="nodes watch has not listed"):
        store.list()
    store.mark_synced()
    assert len(store.list()) == 1


def test_managed_fields_are_not_kept_and_the_handed_object_is_not_changed() -> None:
    handed = pod("a", managedFields=[{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}], uid="u-1")
    store = Store(r.POD)
    store.apply("ADDED", handed)
    store.mark_synced()
    assert store.list()[0]["metadata"] == {"name": "a", "namespace": "default", "uid": "u-1"}
    assert "managedFields" in handed["metadata"], "the consumer's object is the watch's, untouched"


def test_a_cache_is_synced_when_every_store_is() -> None:
    cache = WatchCache((r.POD, r.NODE))
    pods, nodes = cache.store(r.POD), cache.store(r.NODE)
    assert pods is not None and nodes is not None and cache.store(r.NODEPOOL) is None
    pods.mark_synced()
    assert not cache.synced
    nodes.mark_synced()
    assert cache.synced
    assert cache.list(r.NODE) == []
    with pytest.raises(KeyError):
        cache.list(r.NODEPOOL)


def test_a_cache_counts_the_events_its_stores_took_and_nothing_else() -> None:
    cache = WatchCache((r.POD, r.NODE))
    pods, nodes = cache.store(r.POD), cache.store(r.NODE)
    assert pods is not None and nodes is not None
    assert cache.changes == 0
    pods.apply("ADDED", pod("a"))
    pods.apply("ADDED", pod("a"))  # a relist hands over what the store already holds: still an event
    nodes.apply("ADDED", pod("n-1", ""))
    assert cache.changes == 3
    pods.apply("BOOKMARK", pod("a"))
    pods.mark_synced()
    assert cache.changes == 3, "a bookmark or a sync is no event"
    pods.apply("MODIFIED", {**pod("a"), "spec": {"nodeName": "n-1"}})
    nodes.apply("DELETED", pod("n-1", ""))
    assert (cache.changes, pods.changes, nodes.changes) == (5, 3, 2)


def test_kept_objects_equal_the_handed_ones_and_share_their_keys_and_short_strings() -> None:
    def decoded(name: str) -> Obj:  # as two JSON documents decode: no string shared between them
        return json.loads(json.dumps({**pod(name), "status": {"phase": "Running", "message": "x" * 100}}))

    store = Store(r.POD)
    first, second = decoded("a"), decoded("b")
    store.apply("ADDED", first)
    store.apply("ADDED", second)
    store.mark_synced()
    kept_a, kept_b = store.list()
    assert (kept_a, kept_b) == (first, second)
    assert next(k for k in kept_a if k == "status") is next(k for k in kept_b if k == "status")
    assert kept_a["status"]["phase"] is kept_b["status"]["phase"]
    assert kept_a["status"]["message"] is not kept_b["status"]["message"], "long strings are not interned"
