"""The local stack's interruption queue, as Karpenter's getting-started CloudFormation template sets it
up: an SQS queue named after the cluster, and EventBridge rules that send it four kinds of event (spot
interruption warning, rebalance recommendation, instance state change, AWS Health scheduled change).
Karpenter is then installed with `settings.interruptionQueue` = the queue's name.

In moto no EC2 instance or AWS Health ever emits such an event by itself, so a user or a benchmark puts
one on the default event bus (EventBridge PutEvents) with the fields EC2 or AWS Health would give it:
moto's EventBridge matches it against the rules and delivers it to the queue as EventBridge does, the
event as JSON. The event shapes are AWS's documented ones.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

ACCOUNT = "123456789012"  # moto's default account
SPOT_WARNING_SECONDS = 120  # EC2 gives a spot instance two minutes between the warning and the reclaim


def sqs_client(endpoint_url: str, region: str) -> Any:
    """A boto3 SQS client on the local moto server (fixed fake credentials)."""
    import boto3

    return boto3.client(
        "sqs", endpoint_url=endpoint_url, region_name=region,
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip


def events_client(endpoint_url: str, region: str) -> Any:
    """A boto3 EventBridge client on the local moto server (fixed fake credentials)."""
    import boto3

    return boto3.client(
        "events", endpoint_url=endpoint_url, region_name=region,
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip


# The rules of Karpenter's CloudFormation template: name suffix -> the event pattern sent to the queue.
RULES: dict[str, dict[str, list[str]]] = {
    "ScheduledChangeRule": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "SpotInterruptionRule": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "RebalanceRule": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "InstanceStateChangeRule": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
}


def create_rules(events: Any, sqs: Any, queue_url: str, prefix: str) -> list[str]:
    """Create (or update: PutRule and PutTargets are idempotent) the EventBridge rules `<prefix>-<name>`
    of RULES, each targeting the queue at `queue_url`; their names."""
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    names = []
    for suffix, pattern in RULES.items():
        name = f"{prefix}-{suffix}"
        events.put_rule(Name=name, EventPattern=json.dumps(pattern), State="ENABLED")
        events.put_targets(Rule=name, Targets=[{"Id": "KarpenterInterruptionQueueTarget", "Arn": arn}])
        names.append(name)
    return names


def create_queue(sqs: Any, name: str) -> str:
    """Create the SQS queue `name` (idempotent, as SQS's CreateQueue is for the same attributes) with a
    300 s message retention, the retention Karpenter's CloudFormation template gives its queue; its URL."""
    return str(sqs.create_queue(QueueName=name, Attributes={"MessageRetentionPeriod": "300"})["QueueUrl"])


def queue_depth(sqs: Any, url: str) -> int:
    """Messages on the queue, visible or received and not yet deleted (SQS's approximate counts)."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


SPOT = "spot"
SCHEDULED_CHANGE = "scheduled-change"
STOPPING = "stopping"
KINDS = (SPOT, SCHEDULED_CHANGE, STOPPING)  # what `nodeflow dev-interrupt --kind` offers


def _time(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _event(detail_type: str, source: str, instance_id: str, region: str, at: datetime, detail: dict[str, Any]) -> str:
    """An EventBridge event body about one instance, with a fresh event id."""
    return json.dumps(
        {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": detail_type,
            "source": source,
            "account": ACCOUNT,
            "time": _time(at),
            "region": region,
            "resources": [f"arn:aws:ec2:{region}:{ACCOUNT}:instance/{instance_id}"],
            "detail": detail,
        }
    )


def spot_interruption_warning(instance_id: str, region: str, now: datetime | None = None) -> str:
    """The event body of an "EC2 Spot Instance Interruption Warning" for `instance_id` (instance-action
    `terminate`, two minutes after `now`)."""
    at = now or datetime.now(UTC)
    detail = {
        "instance-id": instance_id,
        "instance-action": "terminate",
        "instance-action-time": _time(at + timedelta(seconds=SPOT_WARNING_SECONDS)),
    }
    return _event("EC2 Spot Instance Interruption Warning", "aws.ec2", instance_id, region, at, detail)


def scheduled_change(instance_id: str, region: str, now: datetime | None = None) -> str:
    """The event body of an AWS Health scheduled change for `instance_id`: an EC2 instance retirement
    (AWS's `AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED` event type), the instance the affected entity."""
    at = now or datetime.now(UTC)
    code = "AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED"
    detail = {
        "eventArn": f"arn:aws:health:{region}::event/EC2/{code}/{uuid.uuid4()}",
        "service": "EC2",
        "eventTypeCode": code,
        "eventTypeCategory": "scheduledChange",
        "startTime": _time(at + timedelta(days=14)),
        "eventDescription": [{"language": "en_US", "latestDescription": "The instance is scheduled for retirement."}],
        "affectedEntities": [{"entityValue": instance_id}],
    }
    return _event("AWS Health Event", "aws.health", instance_id, region, at, detail)


def instance_stopping(instance_id: str, region: str, now: datetime | None = None) -> str:
    """The event body of an "EC2 Instance State-change Notification" of `instance_id` to `stopping`."""
    detail = {"instance-id": instance_id, "state": "stopping"}
    return _event(
        "EC2 Instance State-change Notification", "aws.ec2", instance_id, region, now or datetime.now(UTC), detail
    )


_BUILDERS = {SPOT: spot_interruption_warning, SCHEDULED_CHANGE: scheduled_change, STOPPING: instance_stopping}


def interruption_event(kind: str, instance_id: str, region: str, now: datetime | None = None) -> str:
    """The event body of `kind` (one of KINDS) for `instance_id`. Raises ValueError for another kind."""
    if kind not in _BUILDERS:
        raise ValueError(f"unknown interruption kind {kind!r}: use one of {', '.join(KINDS)}")
    return _BUILDERS[kind](instance_id, region, now)


def queue_url(sqs: Any, name: str | None) -> str:
    """The URL of queue `name`, else of the only queue in moto. Raises LookupError when there is none
    (the stack was started with `--interruption-queue ''`) or several and no name."""
    if name:
        try:
            return str(sqs.get_queue_url(QueueName=name)["QueueUrl"])
        except sqs.exceptions.QueueDoesNotExist:
            raise LookupError(f"the stack has no queue named {name!r}") from None
    urls = sqs.list_queues().get("QueueUrls", [])
    if len(urls) != 1:
        found = "none (started with --interruption-queue '')" if not urls else ", ".join(urls)
        raise LookupError(f"pass --queue: the stack's queues are {found}")
    return str(urls[0])


def send_interruption(events: Any, instance_id: str, region: str, kind: str = SPOT) -> None:
    """Put an event of `kind` (one of KINDS) for `instance_id` on the default event bus, as EC2 or AWS
    Health would; the rules of `create_rules` deliver it to the queue. Raises RuntimeError when
    EventBridge refuses it."""
    event = json.loads(interruption_event(kind, instance_id, region))
    entry = {
        "Source": event["source"],
        "DetailType": event["detail-type"],
        "Detail": json.dumps(event["detail"]),
        "Resources": event["resources"],
    }
    answer = events.put_events(Entries=[entry])
    if answer.get("FailedEntryCount"):
        raise RuntimeError(f"EventBridge refused the {kind} event: {answer.get('Entries')}")
