"""The EC2 interruption events EventBridge puts on the interruption queue, parsed (pure: no I/O).

Karpenter's interruption controller (https://karpenter.sh/docs/concepts/disruption/#interruption) reads
the SQS queue its setup fills through EventBridge rules, and acts on four kinds of event:

- `EC2 Spot Instance Interruption Warning` (source `aws.ec2`): the spot instance is reclaimed in two
  minutes. Karpenter marks the offering unavailable and deletes the NodeClaim.
- `EC2 Instance Rebalance Recommendation` (source `aws.ec2`): the spot instance is at elevated risk of
  interruption. Karpenter only records an event.
- `AWS Health Event` (source `aws.health`) of service `EC2` and category `scheduledChange`: AWS will
  stop or retire the instance. Karpenter deletes the NodeClaim.
- `EC2 Instance State-change Notification` (source `aws.ec2`): states `stopping` and `stopped`, and
  `shutting-down` and `terminated`, delete the NodeClaim; other states (`pending`, `running`) do nothing.

`parse_message(body)` turns one SQS message body into a `ParsedMessage` (a kind and the instance ids it
concerns) or an `UnknownMessage` (malformed JSON, an event of another kind, no instance id) carrying the
reason. It never raises. The event formats are AWS's:
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html and
https://docs.aws.amazon.com/health/latest/ug/aws-health-concepts-and-terms.html.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """What a parsed event asks for."""

    SPOT_INTERRUPTION = "SpotInterruption"
    REBALANCE_RECOMMENDATION = "RebalanceRecommendation"
    SCHEDULED_CHANGE = "ScheduledChange"
    INSTANCE_STOPPING = "InstanceStopping"  # state-change to stopping or stopped
    INSTANCE_TERMINATING = "InstanceTerminating"  # state-change to shutting-down or terminated
    NO_ACTION = "NoAction"  # a state-change to a state nothing is done for (pending, running)
    # not from the queue: an impaired status check or a scheduled event (cloudprovider.aws.interruption.instance_status)
    INSTANCE_UNHEALTHY = "InstanceUnhealthy"


@dataclass(frozen=True)
class Action:
    """What the consumer does for a kind: the Kubernetes event it records on the NodeClaim and its Node
    (Karpenter's reasons and types), whether the NodeClaim is disrupted, and whether the instance's
    offering is marked unavailable."""

    event_reason: str
    event_type: str
    message: str
    disrupts: bool
    marks_offering: bool


ACTIONS: dict[Kind, Action] = {
    Kind.SPOT_INTERRUPTION: Action("SpotInterrupted", "Warning", "Spot interruption warning received", True, True),
    Kind.REBALANCE_RECOMMENDATION: Action(
        "SpotRebalanceRecommendation", "Normal", "Spot rebalance recommendation received", False, False
    ),
    Kind.SCHEDULED_CHANGE: Action(
        "InstanceUnhealthy", "Warning", "AWS Health scheduled change for the instance", True, False
    ),
    Kind.INSTANCE_UNHEALTHY: Action(
        "InstanceUnhealthy", "Warning", "EC2 status check impaired or event scheduled for the instance", True, False
    ),
    Kind.INSTANCE_STOPPING: Action("InstanceStopping", "Warning", "Instance is stopping", True, False),
    Kind.INSTANCE_TERMINATING: Action("InstanceTerminating", "Warning", "Instance is terminating", True, False),
}

SPOT_INTERRUPTION = "EC2 Spot Instance Interruption Warning"
REBALANCE_RECOMMENDATION = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE = "EC2 Instance State-change Notification"
HEALTH_EVENT = "AWS Health Event"
STOPPING_STATES = frozenset({"stopping", "stopped"})
TERMINATING_STATES = frozenset({"shutting-down", "terminated"})
_INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8,17}$")
_ARN_INSTANCE = re.compile(r"^arn:[^:]+:ec2:[^:]*:[^:]*:instance/(i-[0-9a-f]{8,17})$")


@dataclass(frozen=True)
class ParsedMessage:
    """An event of a known kind; `instance_ids` sorted, without duplicates, never empty; `event_id` is
    EventBridge's id of the event ("" when absent), the same in every copy of a duplicated event."""

    kind: Kind
    instance_ids: tuple[str, ...]
    event_id: str = ""
    detail: str = ""  # what the event said beyond its kind (the state, the Health event type code)


@dataclass(frozen=True)
class UnknownMessage:
    """A body that is no event the consumer acts on; `reason` says why, for the log."""

    reason: str
    event_id: str = ""


def parse_message(body: str) -> ParsedMessage | UnknownMessage:
    """Parse one SQS message body (see the module docstring). Never raises."""
    try:
        event = json.loads(body)
    except (ValueError, TypeError) as err:
        return UnknownMessage(f"not JSON: {err}")
    if not isinstance(event, dict):
        return UnknownMessage(f"not a JSON object but {type(event).__name__}")
    raw_id = event.get("id")
    event_id = raw_id if isinstance(raw_id, str) else ""
    detail_type, source, detail = event.get("detail-type"), event.get("source"), event.get("detail")
    if not isinstance(detail, dict):
        return UnknownMessage(f"detail-type {detail_type!r}: no detail object", event_id)
    if source == "aws.ec2" and detail_type == SPOT_INTERRUPTION:
        return _single_instance(Kind.SPOT_INTERRUPTION, detail, event_id, str(detail.get("instance-action", "")))
    if source == "aws.ec2" and detail_type == REBALANCE_RECOMMENDATION:
        return _single_instance(Kind.REBALANCE_RECOMMENDATION, detail, event_id)
    if source == "aws.ec2" and detail_type == STATE_CHANGE:
        state = detail.get("state")
        if not isinstance(state, str):
            return UnknownMessage(f"{STATE_CHANGE} without a state", event_id)
        kind = (
            Kind.INSTANCE_STOPPING
            if state in STOPPING_STATES
            else Kind.INSTANCE_TERMINATING
            if state in TERMINATING_STATES
            else Kind.NO_ACTION
        )
        return _single_instance(kind, detail, event_id, state)
    if source == "aws.health" and detail_type == HEALTH_EVENT:
        return _health_event(event, detail, event_id)
    return UnknownMessage(f"unknown event: source {source!r}, detail-type {detail_type!r}", event_id)


def _single_instance(
    kind: Kind, detail: dict[str, Any], event_id: str, extra: str = ""
) -> ParsedMessage | UnknownMessage:
    instance_id = detail.get("instance-id")
    if not isinstance(instance_id, str) or not _INSTANCE_ID.match(instance_id):
        return UnknownMessage(f"{kind}: detail.instance-id {instance_id!r} is not an instance id", event_id)
    return ParsedMessage(kind, (instance_id,), event_id, extra)


def _health_event(event: dict[str, Any], detail: dict[str, Any], event_id: str) -> ParsedMessage | UnknownMessage:
    """An AWS Health event: only EC2 scheduled changes; the instances are the affected entities' values
    and the event's resources (instance ids or instance ARNs)."""
    service, category = detail.get("service"), detail.get("eventTypeCategory")
    if service != "EC2" or category != "scheduledChange":
        return UnknownMessage(f"AWS Health event of service {service!r}, category {category!r}", event_id)
    ids: set[str] = set()
    entities = detail.get("affectedEntities")
    for entity in entities if isinstance(entities, list) else []:
        value = entity.get("entityValue") if isinstance(entity, dict) else None
        if isinstance(value, str) and _INSTANCE_ID.match(value):
            ids.add(value)
    resources = event.get("resources")
    for resource in resources if isinstance(resources, list) else []:
        if not isinstance(resource, str):
            continue
        arn = _ARN_INSTANCE.match(resource)
        if arn:
            ids.add(arn.group(1))
        elif _INSTANCE_ID.match(resource):
            ids.add(resource)
    if not ids:
        return UnknownMessage("AWS Health scheduled change names no instance", event_id)
    return ParsedMessage(Kind.SCHEDULED_CHANGE, tuple(sorted(ids)), event_id, str(detail.get("eventTypeCode", "")))
