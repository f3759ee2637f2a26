"""The interruption queue on the local stack's moto server over HTTP, with real boto3: a spot interruption
warning for a launched instance is acted on by the consumer (offering marked, the claim's workflow
signalled) and only then deleted from the queue; a malformed message is deleted; an unacted one stays.

The queue's calls go through `cloudprovider.aws.factory.new_interruption_queue`, so the run-time IAM
check (tests/iam_coverage.py) sees nodeflow's sqs:GetQueueUrl, ReceiveMessage and DeleteMessage."""

from __future__ import annotations

import functools
import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from activities.interruption.consumer import ClaimDisrupter, InterruptionConsumer
from cloudprovider.aws.factory import new_interruption_queue
from cloudprovider.aws.interruption.queue import InterruptionQueue, QueueMessage
from cloudprovider.unavailable import UnavailableOfferings
from devstack.aws.response_cache import default_cache_dir
from devstack.aws.server import MotoServer
from kube import resources as r
from kube.fake import MemKube
from kube.types import Obj
from tests.eventually import eventually
from tests.interruption_events import scheduled_change, spot_interruption, state_change

CLUSTER = "it-interruption"
REGION = "us-west-2"
_queues = itertools.count(1)


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoServer]:
    with MotoServer(cluster_name=CLUSTER, region=REGION, response_cache=default_cache_dir()) as server:
        yield server


@pytest.fixture
def sqs(aws: MotoServer) -> Any:
    return boto3.client(
        "sqs", region_name=REGION, endpoint_url=aws.url, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


@pytest.fixture
def queue(aws: MotoServer, sqs: Any) -> InterruptionQueue:
    name = f"{CLUSTER}-{next(_queues)}"
    sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "1"})
    return new_interruption_queue(REGION, aws.url, queue_name=name, credentials=("testing", "testing"))


@functools.cache
def amazon_image(url: str) -> str:
    """One Amazon-owned image of the server at `url` (listing them all costs about a second of CPU)."""
    return str(ec2_client(url).describe_images(Owners=["amazon"])["Images"][0]["ImageId"])


def ec2_client(url: str) -> Any:
    return boto3.client(
        "ec2", region_name=REGION, endpoint_url=url, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def launched_spot_instance(aws: MotoServer) -> str:
    ec2 = ec2_client(aws.url)
    image = amazon_image(aws.url)
    subnet = aws.seeded["subnets"][0]
    subnet_id = subnet["id"] if isinstance(subnet, dict) else subnet
    reservation = ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, InstanceType="m5.large", SubnetId=subnet_id,
        InstanceMarketOptions={"MarketType": "spot"},
    )  # fmt: skip
    return str(reservation["Instances"][0]["InstanceId"])


def claim(name: str, instance_id: str) -> Obj:
    labels = {
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "us-west-2a",
        "karpenter.sh/capacity-type": "spot",
    }
    return {
        "kind": "NodeClaim",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "status": {"providerID": f"aws:///us-west-2a/{instance_id}"},
    }


class Recorded:
    def __init__(self) -> None:
        self.signals: list[str] = []
        self.events: list[str] = []

    def signal(self, name: str, reason: str) -> bool:
        self.signals.append(name)
        return True

    def record(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        self.events.append(reason)


def visible(sqs: Any, queue: InterruptionQueue) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue.url(), AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


def test_a_spot_warning_is_acted_on_then_deleted(aws: MotoServer, sqs: Any, queue: InterruptionQueue) -> None:
    instance_id = launched_spot_instance(aws)
    kube = MemKube()
    with kube.as_admin():
        kube.create(r.NODECLAIM, claim("spot-1", instance_id))
    recorded = Recorded()
    consumer = InterruptionConsumer(queue, ClaimDisrupter(kube, recorded.signal, UnavailableOfferings(), recorded))
    sqs.send_message(QueueUrl=queue.url(), MessageBody=spot_interruption(instance_id))
    sqs.send_message(QueueUrl=queue.url(), MessageBody="not an event")

    messages = queue.receive(wait_seconds=1)
    assert len(messages) == 2
    counts = consumer.handle(messages)

    assert recorded.signals == ["spot-1"]
    assert consumer.disrupter.unavailable.is_unavailable("m5.large", "us-west-2a", "spot")
    assert "SpotInterrupted" in recorded.events
    assert (counts.acted, counts.unknown, counts.deleted) == (1, 1, 2)
    assert visible(sqs, queue) == 0
    assert queue.receive(wait_seconds=1) == []


def test_a_message_whose_signal_failed_comes_back(aws: MotoServer, sqs: Any, queue: InterruptionQueue) -> None:
    instance_id = launched_spot_instance(aws)
    kube = MemKube()
    with kube.as_admin():
        kube.create(r.NODECLAIM, claim("spot-2", instance_id))
    attempts: list[str] = []

    def failing_then_accepting(name: str, reason: str) -> bool:
        attempts.append(name)
        if len(attempts) == 1:
            raise ConnectionError("temporal unreachable")
        return True

    recorded = Recorded()
    disrupter = ClaimDisrupter(kube, failing_then_accepting, UnavailableOfferings(), recorded)
    consumer = InterruptionConsumer(queue, disrupter)
    sqs.send_message(QueueUrl=queue.url(), MessageBody=spot_interruption(instance_id))
    assert consumer.handle(queue.receive(wait_seconds=1)).left == 1
    redelivered = queue.receive(wait_seconds=5)  # after the 1 s visibility timeout
    assert len(redelivered) == 1
    assert consumer.handle(redelivered).acted == 1
    assert attempts == ["spot-2", "spot-2"]
    assert visible(sqs, queue) == 0


class ShortPolls:
    """The queue with 1 s long polls, so that a stopped consumer's thread ends within a second."""

    def __init__(self, queue: InterruptionQueue) -> None:
        self.queue = queue

    def receive(self) -> list[QueueMessage]:
        return self.queue.receive(wait_seconds=1)

    def delete(self, message: QueueMessage) -> None:
        self.queue.delete(message)


def malformed_or_unrelated(n: int) -> str:
    """The n-th of a hundred bodies no consumer acts on: broken JSON, other shapes, other sources and
    detail types, other AWS Health events, events naming no instance."""
    shapes = [
        lambda: "{not json" + "x" * n,
        lambda: json.dumps([n]),
        lambda: json.dumps(
            {"id": f"e-{n}", "detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2"}
        ),
        lambda: json.dumps({"id": f"e-{n}", "detail-type": "Object Created", "source": "aws.s3", "detail": {}}),
        lambda: spot_interruption(f"not-an-instance-{n}"),
        lambda: state_change("i-1", "stopping"),  # too short to be an instance id
        lambda: scheduled_change(service="RDS"),
        lambda: scheduled_change(),  # EC2, but no instance named
        lambda: "",
        lambda: json.dumps({"id": f"e-{n}", "source": "aws.ec2", "detail-type": None, "detail": {"x": n}}),
    ]
    return shapes[n % len(shapes)]()


def test_a_hundred_bad_messages_among_five_real_ones_are_counted_and_deleted_and_the_five_acted_on(
    aws: MotoServer, sqs: Any, queue: InterruptionQueue
) -> None:
    kube = MemKube()
    instances = [launched_spot_instance(aws) for _ in range(5)]
    with kube.as_admin():
        for n, instance_id in enumerate(instances):
            kube.create(r.NODECLAIM, claim(f"real-{n}", instance_id))
    recorded = Recorded()
    disrupter = ClaimDisrupter(kube, recorded.signal, UnavailableOfferings(), recorded)
    consumer = InterruptionConsumer(ShortPolls(queue), disrupter)
    bodies = [malformed_or_unrelated(n) for n in range(100)]
    for n, instance_id in enumerate(instances):
        bodies.insert(20 * n + 7, spot_interruption(instance_id))
    for start in range(0, len(bodies), 10):
        entries = [{"Id": str(i), "MessageBody": b or " "} for i, b in enumerate(bodies[start : start + 10])]
        sqs.send_message_batch(QueueUrl=queue.url(), Entries=entries)

    stop = threading.Event()
    running = threading.Thread(target=consumer.run, args=(stop,), daemon=True)
    running.start()
    try:
        eventually(lambda: consumer.counts.deleted == 105, timeout=60, what="every message deleted")
        assert running.is_alive()
    finally:
        stop.set()
        running.join(timeout=10)
    assert sorted(recorded.signals) == [f"real-{n}" for n in range(5)]
    assert (consumer.counts.acted, consumer.counts.unknown, consumer.counts.left) == (5, 100, 0)
    assert visible(sqs, queue) == 0
