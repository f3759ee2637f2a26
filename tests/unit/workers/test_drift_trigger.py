"""workers.watchers.DriftTrigger: which NodePool and EC2NodeClass events signal which claims."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kube import resources as r
from kube.fake import MemKube
from workers.watchers import DriftTrigger
from workflows.messages import NodeClaimSignal


class Signals:
    """A stand-in for TemporalStarter's NodeClaim signals that records what was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    async def signal_node_claim(self, name: str, signal: NodeClaimSignal, reason: str) -> bool:
        self.sent.append((name, signal))
        return True

    async def expire_node_claim(self, name: str, reason: str) -> bool:
        return await self.signal_node_claim(name, NodeClaimSignal.EXPIRE, reason)

    async def check_node_claim_drift(self, name: str, reason: str) -> bool:
        return await self.signal_node_claim(name, NodeClaimSignal.CHECK_DRIFT, reason)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    running = asyncio.new_event_loop()
    thread = threading.Thread(target=running.run_forever, daemon=True)
    thread.start()
    yield running
    running.call_soon_threadsafe(running.stop)
    thread.join(timeout=5)
    running.close()


def claim(name: str, pool: str, node_class: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": pool}},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class}},
    }


def obj(name: str, generation: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "generation": generation}}


@pytest.fixture
def kube() -> MemKube:
    kube = MemKube()
    kube.create(r.NODECLAIM, claim("default-a", "default", "default"))
    kube.create(r.NODECLAIM, claim("gpu-b", "gpu", "default"))
    kube.create(r.NODECLAIM, claim("gpu-c", "gpu", "other"))
    return kube


def test_a_spec_change_signals_the_claims_of_that_pool_or_class(kube: MemKube, loop: asyncio.AbstractEventLoop) -> None:
    signals = Signals()
    trigger = DriftTrigger(kube, signals, loop, signals_per_second=1e6)  # type: ignore[arg-type]

    trigger._on_node_pool("ADDED", obj("gpu", 1))  # first sight (the worker starting): nothing
    trigger._on_node_class("ADDED", obj("default", 1))  # the same name as a NodePool: tracked apart
    trigger._on_node_pool("MODIFIED", obj("gpu", 1))  # a status update: the spec did not change
    assert signals.sent == []

    trigger._on_node_pool("MODIFIED", obj("gpu", 2))
    assert signals.sent == [("gpu-b", "check_drift"), ("gpu-c", "check_drift")]

    signals.sent.clear()
    trigger._on_node_class("ADDED", obj("default", 2))  # changed while the watch was restarting
    assert signals.sent == [("default-a", "check_drift"), ("gpu-b", "check_drift")]

    signals.sent.clear()
    trigger._on_node_pool("DELETED", obj("gpu", 2))
    trigger._on_node_pool("ADDED", obj("gpu", 1))  # a new pool of the same name: first sight again
    assert signals.sent == []


class Unreachable(Signals):
    async def signal_node_claim(self, name: str, signal: NodeClaimSignal, reason: str) -> bool:
        self.sent.append((name, signal))
        raise ConnectionError("Temporal is unreachable")


def test_an_unreachable_temporal_stops_the_round_after_one_try(kube: MemKube, loop: asyncio.AbstractEventLoop) -> None:
    signals = Unreachable()
    trigger = DriftTrigger(kube, signals, loop, signals_per_second=1e6)  # type: ignore[arg-type]
    trigger._on_node_class("ADDED", obj("default", 1))
    trigger._on_node_class("MODIFIED", obj("default", 2))
    assert signals.sent == [("default-a", "check_drift")]  # not one timeout per claim
