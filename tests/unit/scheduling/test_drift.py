"""scheduling.drift: each check, table-driven, and the order find_drift applies them in."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from apis.requirements import NodeSelectorRequirement
from scheduling.drift import (
    AMI_DRIFTED,
    INSTANCE_TYPE_NOT_FOUND,
    NODECLASS_DRIFTED,
    NODEPOOL_DRIFTED,
    PLACEMENT_GROUP_DRIFTED,
    REQUIREMENTS_DRIFTED,
    SECURITY_GROUP_DRIFTED,
    SUBNET_DRIFTED,
    DriftFacts,
    ami_drift,
    find_drift,
    instance_type_not_found,
    node_class_drift,
    nodepool_drift,
    placement_group_drift,
    requirements_drift,
    security_group_drift,
    subnet_drift,
)

PG_LABEL = "karpenter.k8s.aws/placement-group-id"


def req(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=operator, values=list(values))


@pytest.mark.parametrize(
    ("claim_hash", "claim_version", "pool_hash", "pool_version", "drifted"),
    [
        ("111", "v3", "111", "v3", False),
        ("111", "v3", "222", "v3", True),
        ("111", "v2", "222", "v3", False),  # a hash version bump re-stamps claims: not drift
        ("", "v3", "222", "v3", False),  # a claim without a hash (not launched by a NodePool)
        ("111", "v3", "", "v3", False),
    ],
)
def test_nodepool_hash(claim_hash: str, claim_version: str, pool_hash: str, pool_version: str, drifted: bool) -> None:
    found = nodepool_drift(claim_hash, claim_version, pool_hash, pool_version)
    assert (found is not None) == drifted
    if found:
        assert found.reason == NODEPOOL_DRIFTED
        assert "222" in found.message and "111" in found.message


@pytest.mark.parametrize(
    ("claim_hash", "claim_version", "class_hash", "class_version", "drifted"),
    [
        ("111", "nodeflow-v1", "111", "nodeflow-v1", False),
        ("111", "nodeflow-v1", "222", "nodeflow-v1", True),
        ("111", "v5", "222", "nodeflow-v1", False),  # stamped by Karpenter: re-stamped, not drift
        ("", "", "222", "nodeflow-v1", False),  # launched before node class hashes were stamped
    ],
)
def test_node_class_hash(
    claim_hash: str, claim_version: str, class_hash: str, class_version: str, drifted: bool
) -> None:
    found = node_class_drift(claim_hash, claim_version, class_hash, class_version)
    assert (found is not None) == drifted
    if found:
        assert found.reason == NODECLASS_DRIFTED == "NodeClassDrift"
        assert "222" in found.message and "111" in found.message


@pytest.mark.parametrize(
    ("instance_type", "offered", "drifted"),
    [
        ("m5.large", frozenset({"m5.large", "c5.large"}), False),
        ("m4.large", frozenset({"m5.large", "c5.large"}), True),
        ("", frozenset({"m5.large"}), False),  # not judged (launched less than an hour ago, or no label)
        ("m4.large", frozenset(), False),  # the offered types are not known
    ],
)
def test_instance_type_not_found(instance_type: str, offered: frozenset[str], drifted: bool) -> None:
    found = instance_type_not_found(instance_type, offered)
    assert (found is not None) == drifted
    if found:
        assert found.reason == INSTANCE_TYPE_NOT_FOUND == "InstanceTypeNotFound" and "m4.large" in found.message


@pytest.mark.parametrize(
    ("requirements", "labels", "drifted"),
    [
        ([req("karpenter.sh/capacity-type", "In", "spot", "on-demand")], {"karpenter.sh/capacity-type": "spot"}, False),
        ([req("karpenter.sh/capacity-type", "In", "on-demand")], {"karpenter.sh/capacity-type": "spot"}, True),
        (
            [req("node.kubernetes.io/instance-type", "NotIn", "m5.large")],
            {"node.kubernetes.io/instance-type": "m5.large"},
            True,
        ),
        ([req("topology.kubernetes.io/zone", "In", "us-west-2a")], {}, False),  # well-known, left to the cloud
        ([req("team", "In", "a")], {}, True),  # a custom label the node must carry
        ([req("team", "DoesNotExist")], {"team": "a"}, True),
        ([req("team", "Exists")], {"team": "a"}, False),
        ([req("karpenter.k8s.aws/instance-cpu", "Gt", "4")], {"karpenter.k8s.aws/instance-cpu": "2"}, True),
        ([req("karpenter.k8s.aws/instance-cpu", "Gt", "4")], {"karpenter.k8s.aws/instance-cpu": "8"}, False),
        ([], {"team": "a"}, False),
    ],
)
def test_requirements(requirements: list[NodeSelectorRequirement], labels: dict[str, str], drifted: bool) -> None:
    found = requirements_drift(requirements, labels)
    assert (found is not None) == drifted
    if found:
        assert found.reason == REQUIREMENTS_DRIFTED
        assert requirements[0].key in found.message


@pytest.mark.parametrize(
    ("image", "amis", "drifted"),
    [
        ("ami-1", ["ami-1", "ami-2"], False),
        ("ami-0", ["ami-1", "ami-2"], True),
        ("", ["ami-1"], False),  # unknown image: never drift
        ("ami-0", [], False),  # unresolved AMIs: never drift
    ],
)
def test_ami(image: str, amis: list[str], drifted: bool) -> None:
    found = ami_drift(image, amis)
    assert (found is not None) == drifted
    if found:
        assert found.reason == AMI_DRIFTED and "ami-0" in found.message


@pytest.mark.parametrize(
    ("subnet", "subnets", "drifted"),
    [("subnet-a", ["subnet-a"], False), ("subnet-x", ["subnet-a", "subnet-b"], True), ("", ["subnet-a"], False)],
)
def test_subnet(subnet: str, subnets: list[str], drifted: bool) -> None:
    found = subnet_drift(subnet, subnets)
    assert (found is not None) == drifted
    if found:
        assert found.reason == SUBNET_DRIFTED


@pytest.mark.parametrize(
    ("groups", "resolved", "drifted"),
    [
        (["sg-1", "sg-2"], ["sg-2", "sg-1"], False),
        (["sg-1"], ["sg-1", "sg-2"], True),
        (["sg-1", "sg-3"], ["sg-1"], True),
        ([], ["sg-1"], False),
    ],
)
def test_security_groups(groups: list[str], resolved: list[str], drifted: bool) -> None:
    found = security_group_drift(groups, resolved)
    assert (found is not None) == drifted
    if found:
        assert found.reason == SECURITY_GROUP_DRIFTED


@pytest.mark.parametrize(
    ("label", "resolved", "drifted"),
    [
        ("pg-1", "pg-1", False),
        ("", "", False),  # no selector, no group
        ("", "pg-1", True),  # a selector added
        ("pg-1", "", True),  # the selector removed
        ("pg-1", "pg-2", True),  # it names another group now
        ("pg-1", None, False),  # the selector resolves to nothing now: unknown
    ],
)
def test_placement_group(label: str, resolved: str | None, drifted: bool) -> None:
    """Karpenter compares the claim's placement-group-id label with the group the node class resolves to."""
    claim_labels = {PG_LABEL: label} if label else {}
    found = placement_group_drift(claim_labels, resolved)
    assert (found is not None) == drifted
    if found:
        assert found.reason == PLACEMENT_GROUP_DRIFTED


def test_find_drift_reports_the_first_reason_in_karpenters_order() -> None:
    everything = DriftFacts(
        claim_hash="1",
        claim_hash_version="v3",
        pool_hash="2",
        pool_hash_version="v3",
        pool_requirements=[req("team", "In", "b")],
        claim_labels={"team": "a", PG_LABEL: "pg-old"},
        instance_type="m4.large",
        offered_instance_types=frozenset({"m5.large"}),
        class_hash="1",
        class_hash_version="nodeflow-v1",
        node_class_hash="2",
        node_class_hash_version="nodeflow-v1",
        image_id="ami-0",
        ami_ids=["ami-1"],
        subnet_id="subnet-x",
        subnet_ids=["subnet-a"],
        security_group_ids=["sg-9"],
        resolved_security_group_ids=["sg-1"],
        placement_group_id="pg-new",
    )
    order: list[str] = []
    facts = everything
    resets: tuple[dict[str, Any], ...] = (
        {"pool_hash": "1"},
        {"pool_requirements": []},
        {"offered_instance_types": frozenset({"m4.large"})},
        {"node_class_hash": "1"},
        {"ami_ids": ["ami-0"]},
        {"resolved_security_group_ids": ["sg-9"]},
        {"subnet_ids": ["subnet-x"]},
        {"placement_group_id": "pg-old"},
    )
    for reset in resets:
        found = find_drift(facts)
        assert found is not None
        order.append(found.reason)
        facts = replace(facts, **reset)
    assert order == [
        NODEPOOL_DRIFTED,
        REQUIREMENTS_DRIFTED,
        INSTANCE_TYPE_NOT_FOUND,
        NODECLASS_DRIFTED,
        AMI_DRIFTED,
        SECURITY_GROUP_DRIFTED,
        SUBNET_DRIFTED,
        PLACEMENT_GROUP_DRIFTED,
    ]
    assert find_drift(facts) is None


def test_nothing_known_is_not_drift() -> None:
    assert find_drift(DriftFacts()) is None
