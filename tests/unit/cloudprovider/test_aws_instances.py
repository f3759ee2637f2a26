"""Instances as nodeflow sees them, from DescribeInstances data."""

from __future__ import annotations

from cloudprovider.aws.instances import to_instance


def test_should_report_offering_network_and_tags() -> None:
    instance = to_instance(
        {
            "InstanceId": "i-0abc",
            "InstanceType": "m5.large",
            "InstanceLifecycle": "spot",
            "Placement": {"AvailabilityZone": "us-west-2b"},
            "State": {"Name": "running"},
            "ImageId": "ami-1",
            "SubnetId": "subnet-b",
            "SecurityGroups": [{"GroupId": "sg-2", "GroupName": "b"}, {"GroupId": "sg-1", "GroupName": "a"}],
            "Tags": [{"Key": "karpenter.sh/nodeclaim", "Value": "default-x"}],
        }
    )
    assert (instance.capacity_type, instance.zone, instance.provider_id) == (
        "spot",
        "us-west-2b",
        "aws:///us-west-2b/i-0abc",
    )
    assert (instance.subnet_id, instance.security_group_ids) == ("subnet-b", ["sg-1", "sg-2"])
    assert instance.node_claim == "default-x"


def test_should_leave_network_unknown_when_not_reported() -> None:
    instance = to_instance({"InstanceId": "i-0abc", "Placement": {"AvailabilityZone": "us-west-2a"}})
    assert (instance.subnet_id, instance.security_group_ids) == ("", [])
