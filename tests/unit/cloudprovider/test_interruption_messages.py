"""cloudprovider.aws.interruption.messages: each EventBridge event kind Karpenter handles, and what is not one."""

from __future__ import annotations

import json

import pytest

from cloudprovider.aws.interruption.messages import ACTIONS, Kind, ParsedMessage, UnknownMessage, parse_message
from tests.interruption_events import (
    rebalance_recommendation,
    scheduled_change,
    spot_interruption,
    state_change,
)

I1, I2 = "i-0123456789abcdef0", "i-0fedcba9876543210"


def test_spot_interruption_warning() -> None:
    parsed = parse_message(spot_interruption(I1, event_id="e-1"))
    assert parsed == ParsedMessage(Kind.SPOT_INTERRUPTION, (I1,), "e-1", "terminate")
    action = ACTIONS[Kind.SPOT_INTERRUPTION]
    assert (action.event_reason, action.disrupts, action.marks_offering) == ("SpotInterrupted", True, True)


def test_rebalance_recommendation_is_an_event_only() -> None:
    parsed = parse_message(rebalance_recommendation(I1))
    assert isinstance(parsed, ParsedMessage) and parsed.kind == Kind.REBALANCE_RECOMMENDATION
    action = ACTIONS[Kind.REBALANCE_RECOMMENDATION]
    assert (action.event_reason, action.disrupts, action.marks_offering) == (
        "SpotRebalanceRecommendation",
        False,
        False,
    )


def test_health_scheduled_change_names_every_affected_instance() -> None:
    parsed = parse_message(scheduled_change(I2, I1))
    assert isinstance(parsed, ParsedMessage)
    assert (parsed.kind, parsed.instance_ids) == (Kind.SCHEDULED_CHANGE, (I1, I2))
    assert parsed.detail == "AWS_EC2_INSTANCE_STOP_SCHEDULED"
    assert ACTIONS[Kind.SCHEDULED_CHANGE].disrupts and not ACTIONS[Kind.SCHEDULED_CHANGE].marks_offering


@pytest.mark.parametrize(
    ("state", "kind"),
    [
        ("stopping", Kind.INSTANCE_STOPPING),
        ("stopped", Kind.INSTANCE_STOPPING),
        ("shutting-down", Kind.INSTANCE_TERMINATING),
        ("terminated", Kind.INSTANCE_TERMINATING),
        ("pending", Kind.NO_ACTION),
        ("running", Kind.NO_ACTION),
    ],
)
def test_state_changes(state: str, kind: Kind) -> None:
    parsed = parse_message(state_change(I1, state))
    assert isinstance(parsed, ParsedMessage) and (parsed.kind, parsed.instance_ids, parsed.detail) == (
        kind,
        (I1,),
        state,
    )
    if kind != Kind.NO_ACTION:
        assert ACTIONS[kind].disrupts and not ACTIONS[kind].marks_offering


MALFORMED_OR_UNKNOWN = [
    ("{not json", "not JSON"),
    ("", "not JSON"),
    ("[1, 2]", "not a JSON object but list"),
    (json.dumps({"detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2"}), "no detail"),
    (json.dumps({"detail-type": "Object Created", "source": "aws.s3", "detail": {}}), "unknown event"),
    (spot_interruption("not-an-instance"), "is not an instance id"),
    (state_change(I1, "running").replace('"state": "running"', '"state": 3'), "without a state"),
    (scheduled_change(I1, service="RDS"), "service 'RDS'"),
    (scheduled_change(I1, category="issue"), "category 'issue'"),
    (scheduled_change(), "names no instance"),
]


# Named by the reason: the bodies carry random event ids, and xdist workers must collect the same ids.
@pytest.mark.parametrize(("body", "reason"), MALFORMED_OR_UNKNOWN, ids=[reason for _, reason in MALFORMED_OR_UNKNOWN])
def test_malformed_or_unknown_messages_say_why(body: str, reason: str) -> None:
    parsed = parse_message(body)
    assert isinstance(parsed, UnknownMessage)
    assert reason in parsed.reason


def test_an_unknown_event_keeps_its_id_for_the_log() -> None:
    parsed = parse_message(json.dumps({"id": "e-9", "detail-type": "x", "source": "y", "detail": {}}))
    assert parsed == UnknownMessage("unknown event: source 'y', detail-type 'x'", "e-9")
