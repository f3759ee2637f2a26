"""The one builder of a NodeClaim workflow's input (workflows.nodeclaim_state.node_claim_input), as the
provisioner's starter and the adopter use it, and the provisioner signal the pod watcher sends."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Any

import pytest

from kube import resources as r
from kube.fake import MemKube
from workers import watchers
from workers.reconcile import adopt_node_claims
from workers.temporal.starter import TemporalStarter
from workflows.nodeclaim_state import ClaimSettings, NodeClaimInput, node_claim_input, node_claim_input_from_object

SETTINGS = ClaimSettings(registration_ttl="20m")


def claim_obj(name: str = "default-abcde", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": spec,
    }


def test_the_input_of_a_claim_object_carries_its_identity_grace_period_and_the_worker_settings() -> None:
    built = node_claim_input_from_object(claim_obj(expireAfter="168h", terminationGracePeriod="1h"), SETTINGS)
    assert built == NodeClaimInput(
        name="default-abcde",
        claim_uid="uid-default-abcde",
        node_pool="default",
        termination_grace_period="1h",
        registration_ttl="20m",
    )
    assert built.settings() == SETTINGS


def test_a_claim_without_termination_grace_period_has_none() -> None:
    assert node_claim_input("c", "u", "p", None, SETTINGS).termination_grace_period is None
    assert node_claim_input_from_object(claim_obj(), SETTINGS).termination_grace_period is None


class RecordingStarter(TemporalStarter):
    """A TemporalStarter without a client that records the inputs it would start workflows with."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(None, "tq", loop, "20m")  # type: ignore[arg-type]
        self.inputs: list[NodeClaimInput] = []
        self.signals: list[int] = []

    async def start_node_claim_async(self, claim_input: NodeClaimInput) -> None:
        self.inputs.append(claim_input)

    async def signal_provisioner(self, pending_pods: int = 0) -> None:
        self.signals.append(pending_pods)


def test_adoption_and_the_provisioner_start_claims_with_the_same_input() -> None:
    kube = MemKube()
    kube.create(r.NODECLAIM, claim_obj(expireAfter="168h"))
    loop = asyncio.new_event_loop()  # the starter's; unused here, closed so that it does not leak
    try:
        adopter = RecordingStarter(loop)
        asyncio.run(adopt_node_claims(kube, adopter))
    finally:
        loop.close()
    (adopted,) = adopter.inputs
    assert adopted == node_claim_input_from_object(kube.get(r.NODECLAIM, "default-abcde"), SETTINGS)


def test_a_replacement_is_started_with_its_waiter_and_a_provisioned_claim_without() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    starter = RecordingStarter(loop)
    try:
        starter.start_node_claim(claim_obj("default-rplcd"), waiter="disruption")
        starter.start_node_claim(claim_obj("default-prvsd"))
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()
    replacement, provisioned = starter.inputs
    assert replacement == dataclasses.replace(
        node_claim_input_from_object(claim_obj("default-rplcd"), SETTINGS), waiter="disruption"
    )
    assert provisioned.waiter == ""


@pytest.mark.parametrize("pods", [0, 3, 1200])
def test_the_pod_watcher_sends_one_signal_with_the_count_of_distinct_pods(
    pods: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    starter = RecordingStarter(loop)
    watcher = watchers.PodWatcher(MemKube(), starter, loop)  # type: ignore[arg-type]
    for i in range(pods):
        pending = {"metadata": {"name": f"p{i}", "namespace": "default"}, "spec": {}, "status": {}}
        monkeypatch.setattr(watchers, "is_provisionable", lambda pod: True)
        watcher._on_event("ADDED", pending)
        watcher._on_event("MODIFIED", pending)  # the same pod again: counted once
    monkeypatch.setattr(watchers, "FLUSH_SECONDS", 0.01)
    stop = threading.Event()
    flusher = threading.Thread(target=watcher._flush_forever, args=(stop,))
    flusher.start()
    threading.Event().wait(0.1)
    stop.set()
    flusher.join(timeout=5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.close()
    assert starter.signals == ([pods] if pods else [])
