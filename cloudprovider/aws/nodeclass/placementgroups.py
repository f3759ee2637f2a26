"""The placement group an EC2NodeClass's `spec.placementGroupSelector` names (Karpenter v1.11+).

The selector names one existing group by name or id; nodeflow never creates groups. It is resolved with
DescribePlacementGroups (by GroupNames or GroupIds, state `available`); a group that does not exist or is
not available leaves the node class not ready, naming the field. Every instance launched from the node
class goes into the group (the launch template's `Placement.GroupId`), as Karpenter's docs describe; EC2
picks the partition of a partition group. Resolved groups are not written to the EC2NodeClass status
(Karpenter's CRD has no field for them): each reader resolves the selector itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apis.ec2nodeclass import EC2NodeClass, PlacementGroupSelector
from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.sdk import EC2API
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError

FIELD = "spec.placementGroupSelector"
# What EC2 answers for a name or id that names no group.
NOT_FOUND_CODES = ("InvalidPlacementGroup.*", "InvalidPlacementGroupId.*")


@dataclass(frozen=True)
class PlacementGroup:
    """A resolved group. `strategy` is cluster, partition or spread; `partition_count` is set for a
    partition group, `spread_level` (rack or host) for a spread group."""

    id: str
    name: str
    strategy: str
    partition_count: int = 0
    spread_level: str = ""


def describe_arguments(selector: PlacementGroupSelector) -> dict[str, Any]:
    """DescribePlacementGroups arguments for the selector: its id or name, available groups only."""
    query: dict[str, Any] = {"GroupIds": [selector.id]} if selector.id else {"GroupNames": [selector.name]}
    return {**query, "Filters": [{"Name": "state", "Values": ["available"]}]}


def from_api(group: dict[str, Any]) -> PlacementGroup:
    """A DescribePlacementGroups `PlacementGroups` entry."""
    return PlacementGroup(
        id=str(group.get("GroupId", "")),
        name=str(group.get("GroupName", "")),
        strategy=str(group.get("Strategy", "")),
        partition_count=int(group.get("PartitionCount") or 0),
        spread_level=str(group.get("SpreadLevel", "") or ""),
    )


def resolve_placement_group(ec2: EC2API, node_class: EC2NodeClass) -> PlacementGroup | None:
    """The group the node class selects, or None when it selects none. Raises NodeClassNotReadyError
    naming spec.placementGroupSelector when no available group matches; other errors propagate."""
    selector = node_class.spec.placement_group_selector
    if selector is None:
        return None
    try:
        groups = call("DescribePlacementGroups", ec2.describe_placement_groups, **describe_arguments(selector))
    except CloudProviderError as error:
        if not has_code(error, *NOT_FOUND_CODES):
            raise
        groups = {}
    found = [from_api(g) for g in groups.get("PlacementGroups", [])]
    if not found:
        shown = selector.model_dump(by_alias=True, exclude_none=True)
        raise NodeClassNotReadyError(
            f"EC2NodeClass {node_class.name}: no available placement group matches {FIELD} {shown}; "
            "create the placement group or fix the selector"
        )
    return found[0]
