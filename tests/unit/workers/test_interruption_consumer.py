"""activities.interruption.consumer.InterruptionConsumer with fakes: a message is deleted only after its action is
recorded (the workflow accepted the signal, or there is nothing to act on), a duplicate does nothing
twice, an unknown message is counted and deleted, a failed signal or list leaves the message."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from activities.interruption.consumer import ClaimDisrupter, InterruptionConsumer
from cloudprovider.aws.interruption.queue import QueueMessage
from cloudprovider.unavailable import UnavailableOfferings
from kube import resources as r
from kube.errors import ServerError
from kube.fake import MemKube
from kube.types import Obj
from tests.interruption_events import rebalance_recommendation, scheduled_change, spot_interruption, state_change

SPOT_ID, OD_ID, OTHER_ID = "i-00000000000000001", "i-00000000000000002", "i-000000000000000ff"


class Journal:
    """One ordered log of what the fakes were asked to do."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str]] = []


class FakeQueue:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.batches: list[list[QueueMessage]] = []
        self.fail_receive = 0

    def receive(self) -> list[QueueMessage]:
        if self.fail_receive:
            self.fail_receive -= 1
            raise ConnectionError("queue unreachable")
        return self.batches.pop(0) if self.batches else []

    def delete(self, message: QueueMessage) -> None:
        self.journal.entries.append(("deleted", message.message_id))


class FakeSignal:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.running = {"spot-a", "od-b"}
        self.fail: set[str] = set()

    def __call__(self, name: str, reason: str) -> bool:
        if name in self.fail:
            raise ConnectionError("temporal unreachable")
        self.journal.entries.append(("signalled", name))
        return name in self.running


class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []  # (kind/name, type, reason)

    def record(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        self.recorded.append((f"{involved.get('kind')}/{involved['metadata']['name']}", event_type, reason))


class ListingKube(MemKube):
    def __init__(self) -> None:
        super().__init__()
        self.fail_lists = False

    def list(self, resource: r.Resource, *args: Any, **kwargs: Any) -> list[Obj]:
        if self.fail_lists:
            raise ServerError("503")
        return super().list(resource, *args, **kwargs)


def claim(name: str, instance_id: str, capacity_type: str, node: str) -> Obj:
    labels = {
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "us-west-2a",
        "karpenter.sh/capacity-type": capacity_type,
    }
    return {
        "kind": "NodeClaim",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "status": {"providerID": f"aws:///us-west-2a/{instance_id}", "nodeName": node},
    }


def message(body: str, message_id: str) -> QueueMessage:
    return QueueMessage(message_id, f"receipt-{message_id}", body)


@pytest.fixture
def journal() -> Journal:
    return Journal()


@pytest.fixture
def kube() -> ListingKube:
    kube = ListingKube()
    with kube.as_admin():
        kube.create(r.NODECLAIM, claim("spot-a", SPOT_ID, "spot", "node-a"))
        kube.create(r.NODECLAIM, claim("od-b", OD_ID, "on-demand", "node-b"))
        kube.create(r.NODE, {"kind": "Node", "metadata": {"name": "node-a"}})
    return kube


@pytest.fixture
def parts(journal: Journal, kube: ListingKube) -> tuple[InterruptionConsumer, FakeQueue, FakeSignal, Events]:
    queue, signal, events = FakeQueue(journal), FakeSignal(journal), Events()
    consumer = InterruptionConsumer(queue, ClaimDisrupter(kube, signal, UnavailableOfferings(), events))
    return consumer, queue, signal, events


Parts = tuple[InterruptionConsumer, FakeQueue, FakeSignal, Events]


def test_spot_warning_marks_the_offering_signals_then_deletes(parts: Parts, journal: Journal) -> None:
    consumer, _, _, events = parts
    counts = consumer.handle([message(spot_interruption(SPOT_ID), "m1")])
    assert journal.entries == [("signalled", "spot-a"), ("deleted", "m1")]  # deleted only after the signal
    assert consumer.disrupter.unavailable.is_unavailable("m5.large", "us-west-2a", "spot")
    assert (counts.acted, counts.deleted, counts.left, counts.unknown) == (1, 1, 0, 0)
    assert events.recorded == [
        ("NodeClaim/spot-a", "Warning", "SpotInterrupted"),
        ("Node/node-a", "Warning", "SpotInterrupted"),
        ("NodeClaim/spot-a", "Warning", "TerminatingOnInterruption"),
        ("Node/node-a", "Warning", "TerminatingOnInterruption"),
    ]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (state_change(OD_ID, "stopping"), "InstanceStopping"),
        (state_change(OD_ID, "terminated"), "InstanceTerminating"),
        (scheduled_change(OD_ID), "InstanceUnhealthy"),
    ],
    ids=["stopping", "terminated", "scheduled-change"],  # the bodies carry random event ids
)
def test_other_disrupting_events_mark_no_offering(parts: Parts, journal: Journal, body: str, reason: str) -> None:
    consumer, _, _, events = parts
    consumer.handle([message(body, "m1")])
    assert journal.entries == [("signalled", "od-b"), ("deleted", "m1")]
    assert consumer.disrupter.unavailable.snapshot() == []
    assert ("NodeClaim/od-b", "Warning", reason) in events.recorded


def test_rebalance_recommendation_records_an_event_only(parts: Parts, journal: Journal) -> None:
    consumer, _, _, events = parts
    consumer.handle([message(rebalance_recommendation(SPOT_ID), "m1")])
    assert journal.entries == [("deleted", "m1")]
    assert events.recorded[0] == ("NodeClaim/spot-a", "Normal", "SpotRebalanceRecommendation")
    assert consumer.disrupter.unavailable.snapshot() == []


def test_a_duplicate_does_nothing_twice(parts: Parts, journal: Journal) -> None:
    consumer, _, _, _ = parts
    body = spot_interruption(SPOT_ID, event_id="event-1")
    consumer.handle([message(body, "m1"), message(body, "m2")])  # EventBridge delivered the event twice
    consumer.handle([message(body, "m1")])  # SQS redelivered a copy
    consumer.handle([message(state_change(SPOT_ID, "shutting-down"), "m3")])  # another event, same claim
    assert journal.entries == [
        ("signalled", "spot-a"), ("deleted", "m1"), ("deleted", "m2"), ("deleted", "m1"), ("deleted", "m3"),
    ]  # fmt: skip
    assert (consumer.counts.acted, consumer.counts.duplicates) == (1, 2)


def test_unknown_messages_are_counted_and_deleted_and_the_rest_acted_on(parts: Parts, journal: Journal) -> None:
    consumer, _, _, _ = parts
    counts = consumer.handle(
        [message("{garbage", "bad-1"), message(spot_interruption(SPOT_ID), "m1"), message('{"x": 1}', "bad-2")]
    )
    assert ("signalled", "spot-a") in journal.entries
    assert {m for e, m in journal.entries if e == "deleted"} == {"bad-1", "bad-2", "m1"}
    assert (counts.unknown, counts.acted, counts.received) == (2, 1, 3)


def test_a_failed_signal_leaves_the_message_for_redelivery(parts: Parts, journal: Journal) -> None:
    consumer, _, signal, _ = parts
    signal.fail = {"spot-a"}
    body = spot_interruption(SPOT_ID, event_id="event-1")
    counts = consumer.handle([message(body, "m1")])
    assert journal.entries == [] and counts.left == 1
    signal.fail = set()
    consumer.handle([message(body, "m1")])  # redelivered after the visibility timeout
    assert journal.entries == [("signalled", "spot-a"), ("deleted", "m1")]


def test_an_instance_without_a_claim_or_a_finished_workflow_has_nothing_to_do(parts: Parts, journal: Journal) -> None:
    consumer, _, signal, _ = parts
    signal.running = set()
    counts = consumer.handle(
        [message(spot_interruption(OTHER_ID), "m1"), message(state_change(OD_ID, "stopped"), "m2")]
    )
    assert journal.entries == [("deleted", "m1"), ("signalled", "od-b"), ("deleted", "m2")]
    assert counts.acted == 0


def test_a_failed_list_leaves_the_known_messages(parts: Parts, journal: Journal, kube: ListingKube) -> None:
    consumer, _, _, _ = parts
    kube.fail_lists = True
    counts = consumer.handle([message(spot_interruption(SPOT_ID), "m1"), message("nope", "bad")])
    assert journal.entries == [("deleted", "bad")]
    assert counts.left == 1


def test_run_retries_a_failed_receive_and_stops(
    parts: Parts, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    consumer, queue, _, _ = parts
    monkeypatch.setattr("activities.interruption.consumer.RETRY_PAUSE_SECONDS", 0.01)
    queue.fail_receive = 1
    queue.batches = [[message(spot_interruption(SPOT_ID), "m1")]]
    stop = threading.Event()
    thread = threading.Thread(target=consumer.run, args=(stop,), daemon=True)
    thread.start()
    for _ in range(500):
        if journal.entries:
            break
        threading.Event().wait(0.01)
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert journal.entries == [("signalled", "spot-a"), ("deleted", "m1")]


def test_messages_and_disruptions_count_in_karpenters_interruption_metrics(parts: Parts) -> None:
    consumer, _, _, _ = parts
    with_pool = claim("pooled", "i-00000000000000003", "spot", "node-c")
    with_pool["metadata"]["labels"]["karpenter.sh/nodepool"] = "general"
    with consumer.disrupter.kube.as_admin():  # type: ignore[attr-defined]
        consumer.disrupter.kube.create(r.NODECLAIM, with_pool)
    consumer.disrupter.signal_delete.running.add("pooled")  # type: ignore[attr-defined]
    batch = [
        message(spot_interruption("i-00000000000000003"), "m1"),
        message(rebalance_recommendation(SPOT_ID), "m2"),
        message("{not json", "m3"),
    ]
    consumer.handle(batch)
    value = consumer.metrics.registry.get_sample_value
    received = "karpenter_interruption_received_messages_total"
    assert value(received, {"message_type": "spot_interrupted"}) == 1
    assert value(received, {"message_type": "rebalance_recommendation"}) == 1
    assert value(received, {"message_type": "unknown"}) == 1
    assert value("karpenter_interruption_deleted_messages_total") == 3
    assert value("karpenter_interruption_message_queue_duration_seconds_count") == 2  # the events with a time
    disrupted = {"reason": "spot_interrupted", "nodepool": "general", "capacity_type": "spot"}
    assert value("karpenter_nodeclaims_disrupted_total", disrupted) == 1
    consumer.handle([message(spot_interruption("i-00000000000000003"), "m1")])  # redelivered: deleted, not acted
    assert value("karpenter_nodeclaims_disrupted_total", disrupted) == 1
    assert value(received, {"message_type": "spot_interrupted"}) == 2
