"""workers.watchers.DeletionWatcher: `delete` for claims removed outright, and `node_changed` for claims
waiting for their Node (registration and initialization wait on it instead of polling)."""

from __future__ import annotations

from typing import Any

from apis.labels import TERMINATION_FINALIZER as TERMINATION
from kube import resources as r
from kube.fake import MemKube, count_lists
from tests.unit.workers.test_drift_trigger import Signals, loop  # noqa: F401 (the event loop fixture)
from workers.watchers import DeletionWatcher

PROVIDER_ID = "aws:///us-west-2a/i-0abc"


def claim(initialized: bool = False, provider_id: str = PROVIDER_ID) -> dict[str, Any]:
    conditions = [{"type": "Initialized", "status": "True"}] if initialized else []
    return {"metadata": {"name": "c-1"}, "status": {"providerID": provider_id, "conditions": conditions}}


def node(ready: str = "False", taints: tuple[str, ...] = ("karpenter.sh/unregistered",)) -> dict[str, Any]:
    return {
        "metadata": {"name": "ip-1"},
        "spec": {"providerID": PROVIDER_ID, "taints": [{"key": k, "effect": "NoSchedule"} for k in taints]},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def watcher(loop: Any, signals: Signals) -> DeletionWatcher:  # noqa: F811
    return DeletionWatcher(MemKube(), signals, loop)  # type: ignore[arg-type]


def test_a_waiting_claim_hears_once_per_change_of_its_nodes_readiness_or_taints(loop: Any) -> None:  # noqa: F811
    signals = Signals()
    watch = watcher(loop, signals)
    watch._on_node("ADDED", node())  # before the claim's providerID was seen: remembered
    assert signals.sent == []
    watch._on_claim("MODIFIED", claim())
    assert signals.sent == [("c-1", "node_changed")]
    watch._on_node("MODIFIED", node(taints=()))  # registration dropped the unregistered taint: no news
    watch._on_node("MODIFIED", node())
    assert signals.sent == [("c-1", "node_changed")]
    watch._on_node("MODIFIED", node(ready="True", taints=()))
    assert signals.sent == [("c-1", "node_changed")] * 2
    watch._on_claim("MODIFIED", claim(initialized=True))  # Initialized: no longer waiting
    watch._on_node("MODIFIED", node(ready="False", taints=()))
    assert signals.sent == [("c-1", "node_changed")] * 2


def test_a_claim_removed_outright_is_told_to_delete_once(loop: Any) -> None:  # noqa: F811
    signals = Signals()
    watch = watcher(loop, signals)
    deleting = claim(initialized=True)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    watch._on_claim("MODIFIED", deleting)
    watch._on_claim("DELETED", deleting)  # already told while it was being deleted
    assert signals.sent == [("c-1", "delete")]
    watch._on_claim("DELETED", claim(initialized=True))  # removed without a deletion seen first
    assert signals.sent == [("c-1", "delete")] * 2


def test_the_node_watch_keeps_the_node_directory(loop: Any) -> None:  # noqa: F811
    watch = watcher(loop, Signals())
    watch._on_node("ADDED", {**node(), "metadata": {"name": "ip-1", "uid": "u-1"}})
    assert watch.nodes.find(PROVIDER_ID) == (False, ("ip-1", "u-1"))
    watch.nodes.mark_complete()  # what the watch does once it listed every Node (its `synced`)
    watch._on_node("DELETED", {**node(), "metadata": {"name": "ip-1", "uid": "u-1"}})
    assert watch.nodes.find(PROVIDER_ID) == (True, None)


def test_a_deleting_node_tells_its_claims_from_the_claim_index_once_it_is_complete(loop: Any) -> None:  # noqa: F811
    signals = Signals()
    kube = MemKube()
    lists = count_lists(kube)
    kube.create(r.NODECLAIM, {"metadata": {"name": "c-1"}, "status": {"providerID": PROVIDER_ID, "nodeName": "ip-1"}})
    watch = DeletionWatcher(kube, signals, loop)  # type: ignore[arg-type]
    deleting = {
        "metadata": {"name": "ip-1", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": [TERMINATION]},
        "spec": {"providerID": PROVIDER_ID},
    }
    watch._on_node("MODIFIED", deleting)  # no whole claim watch yet: the claims are listed
    assert (signals.sent, lists) == ([("c-1", "delete")], ["nodeclaims"])

    other = DeletionWatcher(kube, signals, loop)  # type: ignore[arg-type]
    other._on_claim("ADDED", {"metadata": {"name": "c-2"}, "status": {"nodeName": "ip-2"}})
    other._claims_listed()  # what the claim watch does once it listed every claim (its `synced`)
    other._on_node("MODIFIED", {**deleting, "metadata": {**deleting["metadata"], "name": "ip-2"}, "spec": {}})
    assert signals.sent[-1] == ("c-2", "delete")
    assert lists == ["nodeclaims"], "a complete index answers without a LIST"
