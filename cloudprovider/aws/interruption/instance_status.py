"""EC2 instance status checks and scheduled events, read as interruptions (pure: no I/O).

`DescribeInstanceStatus` reports, per running instance, two status checks (`InstanceStatus`: the
instance's own OS and network; `SystemStatus`: the AWS host under it) and the scheduled `Events` AWS
plans for the instance (`instance-retirement`, `instance-stop`, `system-maintenance`, `system-reboot`,
`instance-reboot`); see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-system-instance-status-check.html
and https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instances-status-check_sched.html.

Karpenter reads the same response without an interruption queue: an instance whose instance or system
status is `impaired`, or which has a scheduled event, is treated as a scheduled change (its NodeClaim is
deleted). `scheduled_changes(statuses)` turns the response's `InstanceStatuses` into one
`ParsedMessage` of kind `INSTANCE_UNHEALTHY` per such instance, for the interruption consumer's action
path (activities.interruption.consumer). An event that already ended (EC2 prefixes its description with
`[Completed]` or `[Canceled]`) is not a reason. An `initializing` or `insufficient-data` check is not
`impaired`: the instance is still booting or EC2 has no verdict yet. Never raises on a malformed entry:
it is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from cloudprovider.aws.interruption.messages import Kind, ParsedMessage

IMPAIRED = "impaired"
ENDED_EVENT_PREFIXES = ("[Completed]", "[Canceled]")


def _check_status(entry: Mapping[str, Any], key: str) -> str:
    check = entry.get(key)
    return str(check.get("Status", "")) if isinstance(check, Mapping) else ""


def _scheduled_event(event: object) -> str:
    """`instance-retirement (not before 2026-01-02T03:04:05+00:00)` for a pending event, '' otherwise."""
    if not isinstance(event, Mapping):
        return ""
    code = str(event.get("Code") or "")
    description = str(event.get("Description") or "")
    if not code or description.startswith(ENDED_EVENT_PREFIXES):
        return ""
    not_before = event.get("NotBefore")
    when = not_before.isoformat() if isinstance(not_before, datetime) else str(not_before or "")
    return f"scheduled event {code}" + (f" (not before {when})" if when else "")


def instance_problems(entry: Mapping[str, Any]) -> list[str]:
    """What makes one `InstanceStatuses` entry a scheduled change, in words; [] when nothing does."""
    problems = [
        f"{label} status check {IMPAIRED}"
        for key, label in (("InstanceStatus", "instance"), ("SystemStatus", "system"))
        if _check_status(entry, key) == IMPAIRED
    ]
    events = entry.get("Events")
    problems += [found for found in map(_scheduled_event, events if isinstance(events, list) else []) if found]
    return problems


def scheduled_changes(statuses: Iterable[Mapping[str, Any]]) -> list[ParsedMessage]:
    """One INSTANCE_UNHEALTHY message per instance with a problem (see the module docstring), sorted by
    instance id; its `detail` lists the problems and its `event_id` names the instance and the problems,
    so the same finding seen again is recognised as a duplicate."""
    found: dict[str, ParsedMessage] = {}
    for entry in statuses:
        if not isinstance(entry, Mapping):
            continue
        instance_id = entry.get("InstanceId")
        problems = instance_problems(entry)
        if not isinstance(instance_id, str) or not instance_id or not problems:
            continue
        detail = "; ".join(problems)
        found[instance_id] = ParsedMessage(
            Kind.INSTANCE_UNHEALTHY, (instance_id,), f"instance-status/{instance_id}/{detail}", detail
        )
    return [found[i] for i in sorted(found)]
