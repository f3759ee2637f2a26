"""EC2 `Instance` dicts -> `cloudprovider.types.Instance`, and the queries that find them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from cloudprovider.aws.errors import call
from cloudprovider.aws.sdk import EC2API
from cloudprovider.types import TAG_CLUSTER_PREFIX, TAG_NODECLAIM, Instance

LIVE_STATES = ("pending", "running", "stopping", "stopped")
STATUS_IDS_PER_CALL = 100  # DescribeInstanceStatus takes at most 100 explicit instance ids


def capacity_type_of(data: Mapping[str, Any]) -> str:
    """reserved for an instance in a capacity reservation, spot for a spot instance, else on-demand."""
    if data.get("CapacityReservationId"):
        return "reserved"
    return "spot" if data.get("InstanceLifecycle") == "spot" else "on-demand"


def to_instance(data: Mapping[str, Any]) -> Instance:
    """The instance as nodeflow sees it. Its placement group is `Placement.GroupId` (its partition
    `Placement.PartitionNumber`, which EC2 reports for an instance in a partition group)."""
    placement = data.get("Placement", {})
    zone = str(placement.get("AvailabilityZone", ""))
    partition = placement.get("PartitionNumber")
    launch_time = data.get("LaunchTime", "")
    reservation = str(data.get("CapacityReservationId") or "")
    return Instance(
        id=str(data["InstanceId"]),
        instance_type=str(data.get("InstanceType", "")),
        zone=zone,
        capacity_type=capacity_type_of(data),
        state=str(data.get("State", {}).get("Name", "")),
        provider_id=f"aws:///{zone}/{data['InstanceId']}",
        image_id=str(data.get("ImageId", "")),
        private_dns_name=str(data.get("PrivateDnsName", "")),
        launch_time=launch_time.isoformat() if isinstance(launch_time, datetime) else str(launch_time),
        subnet_id=str(data.get("SubnetId", "")),
        security_group_ids=sorted(str(g["GroupId"]) for g in data.get("SecurityGroups", []) if g.get("GroupId")),
        tags={t["Key"]: t["Value"] for t in sorted(data.get("Tags", []), key=lambda t: t["Key"])},
        capacity_reservation_id=reservation,
        capacity_reservation_type=(
            ("capacity-block" if data.get("InstanceLifecycle") == "capacity-block" else "default")
            if reservation
            else ""
        ),
        placement_group_id=str(placement.get("GroupId") or ""),
        placement_group_partition=str(partition) if partition is not None else "",
    )


class InstanceQueries:
    """Read instances of one cluster."""

    def __init__(self, ec2: EC2API, cluster_name: str) -> None:
        self._ec2 = ec2
        self._cluster_tag = TAG_CLUSTER_PREFIX + cluster_name

    def describe(self, **kwargs: Any) -> list[Instance]:
        out: list[Instance] = []
        token: str | None = None
        while True:
            page = call(
                "DescribeInstances", self._ec2.describe_instances, **kwargs, **({"NextToken": token} if token else {})
            )
            out += [to_instance(i) for r in page.get("Reservations", []) for i in r.get("Instances", [])]
            token = page.get("NextToken")
            if not token:
                return sorted(out, key=lambda i: i.id)

    def live(self, node_claim: str | None = None) -> list[Instance]:
        filters = [
            {"Name": "tag-key", "Values": [self._cluster_tag]},
            {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
        ]
        if node_claim is not None:
            filters.append({"Name": f"tag:{TAG_NODECLAIM}", "Values": [node_claim]})
        return self.describe(Filters=filters)

    def statuses(self, instance_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The `InstanceStatuses` entries of `instance_ids` (DescribeInstanceStatus, at most
        STATUS_IDS_PER_CALL ids a call), sorted by instance id. EC2 answers for running instances only;
        an id of an instance gone since it was listed is left out by EC2, not an error."""
        out: list[dict[str, Any]] = []
        ids = sorted(set(instance_ids))
        for start in range(0, len(ids), STATUS_IDS_PER_CALL):
            token: str | None = None
            while True:
                page = call(
                    "DescribeInstanceStatus",
                    self._ec2.describe_instance_status,
                    InstanceIds=ids[start : start + STATUS_IDS_PER_CALL],
                    **({"NextToken": token} if token else {}),
                )
                out += page.get("InstanceStatuses", [])
                token = page.get("NextToken")
                if not token:
                    break
        return sorted(out, key=lambda s: str(s.get("InstanceId", "")))
