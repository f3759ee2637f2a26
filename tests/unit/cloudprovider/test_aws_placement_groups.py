"""spec.placementGroupSelector: the DescribePlacementGroups query, resolution and readiness, what the
launch template gets (checked against EC2's request model), the instance's placement and its labels."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError
from botocore.validate import ParamValidator

from activities.nodeclaim.translate import launched_labels
from activities.provisioning.nodeclass_status import desired_status
from apis import labels
from cloudprovider.aws.instances import to_instance
from cloudprovider.aws.launch.launchtemplate import LaunchTemplateSpec
from cloudprovider.aws.nodeclass.placementgroups import PlacementGroup, describe_arguments, resolve_placement_group
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError
from cloudprovider.types import Instance
from tests.unit.cloudprovider.builders import node_class

EC2 = botocore.session.get_session().get_service_model("ec2")
PARTITION_GROUP = {
    "GroupName": "kafka",
    "GroupId": "pg-0123456789abcdef0",
    "State": "available",
    "Strategy": "partition",
    "PartitionCount": 3,
}


def valid(operation: str, request: dict[str, Any]) -> dict[str, Any]:
    report = ParamValidator().validate(request, EC2.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()
    return request


class PlacementGroupsEC2:
    """DescribePlacementGroups only: `groups` answer every query, `error` (a code) is raised instead."""

    def __init__(self, groups: list[dict[str, Any]], error: str = "") -> None:
        self.groups = groups
        self.error = error
        self.calls: list[dict[str, Any]] = []

    def describe_placement_groups(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(valid("DescribePlacementGroups", kwargs))
        if self.error:
            raise ClientError({"Error": {"Code": self.error, "Message": "no"}}, "DescribePlacementGroups")
        return {"PlacementGroups": self.groups}


@pytest.mark.parametrize(
    ("selector", "query"),
    [({"name": "kafka"}, {"GroupNames": ["kafka"]}), ({"id": "pg-0abc"}, {"GroupIds": ["pg-0abc"]})],
)
def test_the_selector_asks_for_its_group_by_name_or_id_available_only(
    selector: dict[str, str], query: dict[str, Any]
) -> None:
    spec = node_class(placementGroupSelector=selector).spec.placement_group_selector
    assert spec is not None
    arguments = valid("DescribePlacementGroups", describe_arguments(spec))
    assert arguments == {**query, "Filters": [{"Name": "state", "Values": ["available"]}]}


def test_a_node_class_without_a_selector_resolves_to_no_group_without_asking() -> None:
    ec2 = PlacementGroupsEC2([PARTITION_GROUP])
    assert resolve_placement_group(ec2, node_class()) is None  # type: ignore[arg-type]
    assert ec2.calls == []


def test_the_selected_group_is_resolved_with_its_strategy() -> None:
    ec2 = PlacementGroupsEC2([PARTITION_GROUP])
    group = resolve_placement_group(ec2, node_class(placementGroupSelector={"name": "kafka"}))  # type: ignore[arg-type]
    assert group == PlacementGroup("pg-0123456789abcdef0", "kafka", "partition", partition_count=3)


@pytest.mark.parametrize("error", ["", "InvalidPlacementGroup.Unknown", "InvalidPlacementGroupId.NotFound"])
def test_a_missing_group_makes_the_node_class_not_ready_naming_the_field(error: str) -> None:
    ec2 = PlacementGroupsEC2([], error)
    with pytest.raises(NodeClassNotReadyError, match=r"spec\.placementGroupSelector \{'name': 'gone'\}") as raised:
        resolve_placement_group(ec2, node_class(placementGroupSelector={"name": "gone"}))  # type: ignore[arg-type]
    status = desired_status({}, None, str(raised.value), "2026-11-24T00:00:00Z", generation=1)
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassNotReady")
    assert "spec.placementGroupSelector" in ready["message"]


def test_other_errors_are_not_taken_for_a_missing_group() -> None:
    ec2 = PlacementGroupsEC2([], "UnauthorizedOperation")
    with pytest.raises(CloudProviderError) as raised:
        resolve_placement_group(ec2, node_class(placementGroupSelector={"name": "kafka"}))  # type: ignore[arg-type]
    assert not isinstance(raised.value, NodeClassNotReadyError)


def test_the_launch_template_places_instances_in_the_group_by_id() -> None:
    spec = LaunchTemplateSpec("ami-1", "ud", ("sg-1",), "profile", node_class(), "AL2023", ())
    placed = LaunchTemplateSpec(
        "ami-1", "ud", ("sg-1",), "profile", node_class(), "AL2023", (), placement_group_id="pg-0abc"
    )
    data = valid("CreateLaunchTemplate", {"LaunchTemplateName": "t", "LaunchTemplateData": placed.data()})
    assert data["LaunchTemplateData"]["Placement"] == {"GroupId": "pg-0abc"}  # EC2 picks the partition
    assert "Placement" not in spec.data()
    assert placed.name() != spec.name()


def test_the_instance_reports_its_group_and_partition_and_the_claim_is_labelled_with_them() -> None:
    data = {
        "InstanceId": "i-1",
        "InstanceType": "m5.large",
        "Placement": {
            "AvailabilityZone": "us-west-2a",
            "GroupId": "pg-0abc",
            "GroupName": "kafka",
            "PartitionNumber": 2,
        },
        "State": {"Name": "running"},
    }
    instance = to_instance(data)
    assert (instance.placement_group_id, instance.placement_group_partition) == ("pg-0abc", "2")
    out = launched_labels(instance, {})
    assert (out[labels.PLACEMENT_GROUP_ID], out[labels.PLACEMENT_GROUP_PARTITION]) == ("pg-0abc", "2")
    plain = Instance(
        id="i-2",
        instance_type="m5.large",
        zone="us-west-2a",
        capacity_type="on-demand",
        state="running",
        provider_id="",
    )
    assert labels.PLACEMENT_GROUP_ID not in launched_labels(plain, {})
    assert labels.PLACEMENT_GROUP_PARTITION not in launched_labels(plain, {})


def test_the_selector_is_judged_by_what_it_resolves_to_not_by_the_static_hash() -> None:
    """Karpenter: a changed placement group is PlacementGroupDrift (label against resolution), so the
    selector is not one of the static fields whose change is NodeClassDrift."""
    assert node_class(placementGroupSelector={"name": "a"}).static_hash() == node_class().static_hash()
