"""cloudprovider.aws.interruption.instance_status: DescribeInstanceStatus entries (EC2's response shape) -> the
instances to treat as a scheduled change."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cloudprovider.aws.interruption.instance_status import instance_problems, scheduled_changes
from cloudprovider.aws.interruption.messages import ACTIONS, Kind

I1, I2, I3 = "i-00000000000000001", "i-00000000000000002", "i-00000000000000003"


def entry(
    instance_id: str, instance: str = "ok", system: str = "ok", events: list[Any] | None = None
) -> dict[str, Any]:
    """One `InstanceStatuses` entry as boto3 returns it."""
    out: dict[str, Any] = {
        "InstanceId": instance_id,
        "AvailabilityZone": "us-west-2a",
        "InstanceState": {"Code": 16, "Name": "running"},
        "InstanceStatus": {"Status": instance, "Details": [{"Name": "reachability", "Status": "passed"}]},
        "SystemStatus": {"Status": system, "Details": [{"Name": "reachability", "Status": "passed"}]},
    }
    if events is not None:
        out["Events"] = events
    return out


def test_healthy_initializing_and_unknown_checks_are_no_reason() -> None:
    statuses = [entry(I1), entry(I2, "initializing", "initializing"), entry(I3, "insufficient-data", "not-applicable")]
    assert scheduled_changes(statuses) == []


def test_an_impaired_instance_or_system_check_is_a_scheduled_change() -> None:
    found = scheduled_changes([entry(I2, system="impaired"), entry(I1, instance="impaired"), entry(I3)])
    assert [(m.kind, m.instance_ids, m.detail) for m in found] == [
        (Kind.INSTANCE_UNHEALTHY, (I1,), "instance status check impaired"),
        (Kind.INSTANCE_UNHEALTHY, (I2,), "system status check impaired"),
    ]
    assert ACTIONS[Kind.INSTANCE_UNHEALTHY].disrupts and not ACTIONS[Kind.INSTANCE_UNHEALTHY].marks_offering
    assert ACTIONS[Kind.INSTANCE_UNHEALTHY].event_reason == ACTIONS[Kind.SCHEDULED_CHANGE].event_reason


def test_a_pending_scheduled_event_is_a_scheduled_change_an_ended_one_is_not() -> None:
    retirement = {
        "Code": "instance-retirement",
        "Description": "The instance is running on degraded hardware",
        "InstanceEventId": "instance-event-0abc",
        "NotBefore": datetime(2026, 12, 1, 6, 0, tzinfo=UTC),
    }
    completed = {"Code": "system-reboot", "Description": "[Completed] scheduled reboot", "NotBefore": "x"}
    canceled = {"Code": "instance-stop", "Description": "[Canceled] scheduled stop"}
    found = scheduled_changes([entry(I1, events=[retirement, completed]), entry(I2, events=[canceled])])
    assert [(m.instance_ids, m.detail) for m in found] == [
        ((I1,), "scheduled event instance-retirement (not before 2026-12-01T06:00:00+00:00)")
    ]


def test_every_problem_is_named_and_the_event_id_is_stable() -> None:
    statuses = [entry(I1, "impaired", "impaired", [{"Code": "system-maintenance", "Description": "maint"}])]
    assert instance_problems(statuses[0]) == [
        "instance status check impaired",
        "system status check impaired",
        "scheduled event system-maintenance",
    ]
    assert scheduled_changes(statuses)[0].event_id == scheduled_changes(statuses)[0].event_id != ""


def test_malformed_entries_are_skipped() -> None:
    bad: list[Any] = [
        "nope",
        {"InstanceStatus": {"Status": "impaired"}},  # no instance id
        {"InstanceId": I1, "InstanceStatus": "impaired", "Events": "retire"},
        {"InstanceId": I2, "Events": [None, {"Description": "no code"}]},
    ]
    assert scheduled_changes(bad) == []
