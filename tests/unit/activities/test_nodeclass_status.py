"""EC2NodeClass status from what its selector terms resolve to."""

from __future__ import annotations

from activities.provisioning.nodeclass_status import ami_status, desired_status
from cloudprovider.types import ResolvedNodeClass

NOW = "2026-11-22T05:00:00Z"
RESOLVED = ResolvedNodeClass(
    subnets=[{"id": "subnet-a", "zone": "us-west-2a", "zoneID": "usw2-az1"}],
    security_groups=[{"id": "sg-1", "name": "nodes"}],
    amis=[
        {"id": "ami-x86", "name": "al2023-x86", "arch": "x86_64", "variant": "standard"},
        {"id": "ami-gpu", "name": "al2023-nvidia", "arch": "x86_64", "variant": "nvidia"},
    ],
    instance_profile="nodeflow-dev_abc",
)


def test_should_list_resolved_subnets_groups_amis_and_be_ready() -> None:
    status = desired_status({}, RESOLVED, "", NOW)
    assert status["subnets"] == [{"id": "subnet-a", "zone": "us-west-2a", "zoneID": "usw2-az1"}]
    assert status["securityGroups"] == [{"id": "sg-1", "name": "nodes"}]
    assert status["instanceProfile"] == "nodeflow-dev_abc"
    gpu = status["amis"][1]["requirements"]
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]} in gpu
    assert {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"} in gpu
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "AMIsReady": "True",
        "InstanceProfileReady": "True",
        "Ready": "True",
        "SecurityGroupsReady": "True",
        "SubnetsReady": "True",
        "ValidationSucceeded": "True",
    }


def condition(status: dict[str, object], type_: str) -> dict[str, str]:
    return next(c for c in status["conditions"] if c["type"] == type_)  # type: ignore[attr-defined]


def test_each_part_says_whether_it_resolved_and_ready_names_the_first_problem() -> None:
    problem = "EC2NodeClass default: no subnet matches spec.subnetSelectorTerms [...]"
    parts = {
        "SubnetsReady": ("False", "SubnetsNotFound", problem),
        "SecurityGroupsReady": ("True", "SecurityGroupsReady", ""),
        "AMIsReady": ("False", "AMINotFound", "EC2NodeClass default: no AMI matches spec.amiSelectorTerms [...]"),
    }
    before = desired_status({}, RESOLVED, "", NOW)
    after = desired_status(before, None, problem, "2026-11-22T05:01:00Z", parts=parts)
    assert (condition(after, "SubnetsReady")["status"], condition(after, "SubnetsReady")["reason"]) == (
        "False",
        "SubnetsNotFound",
    )
    assert condition(after, "AMIsReady")["reason"] == "AMINotFound"
    assert condition(after, "SecurityGroupsReady")["status"] == "True"
    assert condition(after, "InstanceProfileReady")["status"] == "True"  # not looked at: left as it was
    assert condition(after, "Ready")["message"] == problem


def test_should_keep_the_last_resolution_and_say_why_it_is_not_ready() -> None:
    before = desired_status({}, RESOLVED, "", NOW)
    after = desired_status(before, None, "no subnet matches spec.subnetSelectorTerms", "2026-11-22T05:01:00Z")
    assert after["subnets"] == before["subnets"]
    ready = condition(after, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassNotReady")
    assert "subnetSelectorTerms" in ready["message"]
    assert ready["lastTransitionTime"] == "2026-11-22T05:01:00Z"


def test_should_be_stable_when_nothing_changed() -> None:
    first = desired_status({}, RESOLVED, "", NOW)
    assert desired_status(first, RESOLVED, "", "2026-11-22T06:00:00Z") == first


def test_should_record_the_generation_it_resolved() -> None:
    status = desired_status({}, RESOLVED, "", NOW, generation=4)
    assert condition(status, "Ready")["observedGeneration"] == 4
    again = desired_status(status, RESOLVED, "", "2026-11-22T06:00:00Z", generation=5)  # the spec changed
    assert condition(again, "Ready")["observedGeneration"] == 5
    assert condition(again, "Ready")["lastTransitionTime"] == NOW  # still Ready: no transition


def test_a_deprecated_ami_is_marked_in_the_status_and_others_are_not() -> None:
    deprecated = ami_status(
        {"id": "ami-1", "name": "old", "arch": "x86_64", "variant": "standard", "deprecated": "true"}
    )
    current = ami_status({"id": "ami-2", "name": "new", "arch": "x86_64", "variant": "standard"})
    assert deprecated["deprecated"] is True
    assert "deprecated" not in current
