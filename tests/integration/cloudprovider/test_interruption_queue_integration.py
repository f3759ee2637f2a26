"""The interruption queue on the local stack's moto server over HTTP, with real boto3: a spot interruption
warning for a launched instance is acted on by the consumer (offering marked, the claim's workflow
signalled) and only then deleted from the queue; a malformed message is deleted; an unacted one stays.

The queue's calls go through `cloudprovider.aws.factory.new_interruption_queue`, so the run-time IAM
check (tests/iam_coverage.py) sees nodeflow's sqs:GetQueueUrl, ReceiveMessage and DeleteMessage."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from cloudprovider.aws.factory import new_interruption_queue
from cloudprovider.aws.interruption_queue import InterruptionQueue
from cloudprovider.unavailable import UnavailableOfferings
from devstack.aws.server import MotoServer
from kube import resources as r
from kube.types import Obj
from tests.interruption_events import spot_interruption
from tests.unit.activities.memkube import MemKube
from workers.interruption import ClaimDisrupter, InterruptionConsumer

CLUSTER = "it-interruption"
REGION = "us-west-2"
_queues = itertools.count(1)


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoServer]:
    with MotoServer(cluster_name=CLUSTER, region=REGION) as server:
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


def launched_spot_instance(aws: MotoServer) -> str:
    ec2 = boto3.client(
        "ec2", region_name=REGION, endpoint_url=aws.url, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
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
