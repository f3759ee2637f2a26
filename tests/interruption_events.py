"""EventBridge events as EventBridge puts them on the interruption queue (AWS's documented shapes), for
the tests of the parser, the consumer and the local stack."""

from __future__ import annotations

import json
import uuid
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-west-2"


def _event(source: str, detail_type: str, detail: dict[str, Any], resources: list[str], **extra: Any) -> str:
    return json.dumps(
        {
            "version": "0",
            "id": extra.pop("event_id", str(uuid.uuid4())),
            "detail-type": detail_type,
            "source": source,
            "account": ACCOUNT,
            "time": "2026-01-05T12:00:00Z",
            "region": REGION,
            "resources": resources,
            "detail": detail,
            **extra,
        }
    )


def _instance_arn(instance_id: str) -> str:
    return f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance_id}"


def spot_interruption(instance_id: str, **extra: Any) -> str:
    return _event(
        "aws.ec2",
        "EC2 Spot Instance Interruption Warning",
        {"instance-id": instance_id, "instance-action": "terminate"},
        [_instance_arn(instance_id)],
        **extra,
    )


def rebalance_recommendation(instance_id: str, **extra: Any) -> str:
    return _event(
        "aws.ec2", "EC2 Instance Rebalance Recommendation", {"instance-id": instance_id},
        [_instance_arn(instance_id)], **extra,
    )  # fmt: skip


def state_change(instance_id: str, state: str, **extra: Any) -> str:
    return _event(
        "aws.ec2", "EC2 Instance State-change Notification", {"instance-id": instance_id, "state": state},
        [_instance_arn(instance_id)], **extra,
    )  # fmt: skip


def scheduled_change(*instance_ids: str, service: str = "EC2", category: str = "scheduledChange", **extra: Any) -> str:
    detail = {
        "eventArn": f"arn:aws:health:{REGION}::event/EC2/AWS_EC2_INSTANCE_STOP_SCHEDULED/x",
        "service": service,
        "eventTypeCode": "AWS_EC2_INSTANCE_STOP_SCHEDULED",
        "eventTypeCategory": category,
        "startTime": "Mon, 05 Jan 2026 12:00:00 GMT",
        "affectedEntities": [{"entityValue": i} for i in instance_ids],
    }
    return _event("aws.health", "AWS Health Event", detail, list(instance_ids), **extra)
