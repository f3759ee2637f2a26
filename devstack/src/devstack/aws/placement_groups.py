"""Placement groups for the local stack: moto 5.2.5 has no CreatePlacementGroup, DescribePlacementGroups
or DeletePlacementGroup (local stack only, never product code).

Groups live in memory per EC2 backend (account and region) with their name, id, strategy, partition
count, spread level and tags. DescribePlacementGroups answers for GroupNames or GroupIds (an unknown one
is EC2's InvalidPlacementGroup.Unknown) and the filters group-name, group-id, state, strategy, tag-key and
tag:<key>. CreateFleet (devstack.aws.patches) puts an instance launched from a template with
`Placement.GroupId` or `Placement.GroupName` into that group, and, in a partition group, into the
partition holding the fewest of its live instances, as EC2 spreads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.utils import random_id

LIVE_STATES = ("pending", "running", "stopping", "stopped")
STRATEGIES = ("cluster", "partition", "spread")


@dataclass
class Group:
    id: str
    name: str
    strategy: str
    partition_count: int = 0
    spread_level: str = ""
    state: str = "available"
    tags: dict[str, str] = field(default_factory=dict)


def groups(backend: Any) -> dict[str, Group]:
    """The placement groups of one moto EC2 backend by id (created empty on first use)."""
    found: dict[str, Group] = backend.__dict__.setdefault("nodeflow_placement_groups", {})
    return found


def _unknown(what: str) -> EC2ClientError:
    return EC2ClientError("InvalidPlacementGroup.Unknown", f"The Placement Group '{what}' is unknown.")


def _as_api(backend: Any, g: Group) -> dict[str, Any]:
    out: dict[str, Any] = {
        "GroupName": g.name,
        "GroupId": g.id,
        "GroupArn": f"arn:aws:ec2:{backend.region_name}:{backend.account_id}:placement-group/{g.name}",
        "State": g.state,
        "Strategy": g.strategy,
        "Tags": [{"Key": k, "Value": v} for k, v in sorted(g.tags.items())],
    }
    if g.strategy == "partition":
        out["PartitionCount"] = g.partition_count
    if g.strategy == "spread":
        out["SpreadLevel"] = g.spread_level or "rack"
    return out


def _matches(g: Group, name: str, values: list[str]) -> bool:
    if name.startswith("tag:"):
        return g.tags.get(name[4:]) in values
    fields = {
        "group-name": g.name,
        "group-id": g.id,
        "state": g.state,
        "strategy": g.strategy,
        "spread-level": g.spread_level,
    }
    if name == "tag-key":
        return any(k in values for k in g.tags)
    if name not in fields:
        raise EC2ClientError("InvalidParameterValue", f"The filter '{name}' is invalid")
    return fields[name] in values


def create_placement_group(self: Any) -> ActionResult:
    """CreatePlacementGroup: an available group (InvalidPlacementGroup.Duplicate for a taken name)."""
    self.error_on_dryrun()
    name, strategy = self._get_param("GroupName"), self._get_param("Strategy") or "cluster"
    if not name or strategy not in STRATEGIES:
        raise EC2ClientError("InvalidParameterValue", f"GroupName is required and Strategy one of {STRATEGIES}")
    existing = groups(self.ec2_backend)
    if any(g.name == name for g in existing.values()):
        raise EC2ClientError("InvalidPlacementGroup.Duplicate", f"The placement group '{name}' already exists.")
    count = int(self._get_param("PartitionCount") or (2 if strategy == "partition" else 0))
    if strategy == "partition" and not 1 <= count <= 7:
        raise EC2ClientError("InvalidParameterValue", "PartitionCount must be between 1 and 7")
    group = Group(
        id=random_id("pg"),
        name=name,
        strategy=strategy,
        partition_count=count if strategy == "partition" else 0,
        spread_level=(self._get_param("SpreadLevel") or "rack") if strategy == "spread" else "",
        tags=dict(self._parse_tag_specification().get("placement-group", {})),
    )
    existing[group.id] = group
    return ActionResult({"PlacementGroup": _as_api(self.ec2_backend, group)})


def describe_placement_groups(self: Any) -> ActionResult:
    """DescribePlacementGroups by GroupNames or GroupIds (each must exist) and filters."""
    found = list(groups(self.ec2_backend).values())
    names, ids = self._get_param("GroupNames", []), self._get_param("GroupIds", [])
    for name in names:
        if not any(g.name == name for g in found):
            raise _unknown(name)
    for group_id in ids:
        if not any(g.id == group_id for g in found):
            raise _unknown(group_id)
    if names:
        found = [g for g in found if g.name in names]
    if ids:
        found = [g for g in found if g.id in ids]
    for f in self._get_param("Filters", []) or []:
        found = [g for g in found if _matches(g, f["Name"], list(f.get("Values", [])))]
    ordered = sorted(found, key=lambda g: g.name)
    return ActionResult({"PlacementGroups": [_as_api(self.ec2_backend, g) for g in ordered]})


def delete_placement_group(self: Any) -> ActionResult:
    """DeletePlacementGroup by name; refused while a live instance is in it, as EC2 does."""
    self.error_on_dryrun()
    name = self._get_param("GroupName")
    existing = groups(self.ec2_backend)
    group = next((g for g in existing.values() if g.name == name), None)
    if group is None:
        raise _unknown(name)
    if _members(self.ec2_backend, group):
        raise EC2ClientError("InvalidPlacementGroup.InUse", f"There are instances in placement group '{name}'.")
    del existing[group.id]
    return ActionResult({})


def _members(backend: Any, group: Group) -> list[Any]:
    return [
        i
        for i in backend.all_instances()
        if getattr(i.placement, "group_id", None) == group.id and i.state in LIVE_STATES
    ]


def targeted(backend: Any, template_data: dict[str, Any]) -> Group | None:
    """The group a launch template's `Placement` names (None for none); InvalidPlacementGroup.Unknown when
    it names one that does not exist."""
    placement = template_data.get("Placement") or {}
    group_id, name = placement.get("GroupId"), placement.get("GroupName")
    if not group_id and not name:
        return None
    for g in groups(backend).values():
        if g.id == group_id or (not group_id and g.name == name):
            return g
    raise _unknown(str(group_id or name))


def launched_into(backend: Any, instance_id: str, group: Group) -> None:
    """Record that the instance runs in the group (in its least-used partition, for a partition group)."""
    instance = backend.get_instance(instance_id)
    if group.strategy == "partition":
        used = [getattr(i.placement, "partition_number", 0) for i in _members(backend, group) if i is not instance]
        instance.placement.partition_number = min(range(1, group.partition_count + 1), key=lambda p: (used.count(p), p))
    instance.placement.group_name = group.name
    instance.placement.group_id = group.id
