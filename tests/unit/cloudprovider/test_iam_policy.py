"""The controller policy's scoping: each statement's resources and conditions (cloudprovider.aws.iam_policy)."""

from __future__ import annotations

from typing import Any

import pytest

from cloudprovider.aws.iam_policy import IMPLIED_ACTIONS, controller_policy, needed_actions

CLUSTER = "prod"


def statements(**kw: Any) -> dict[str, dict[str, Any]]:
    policy = controller_policy(CLUSTER, **{"account": "111122223333", "region": "eu-west-1", **kw})
    assert policy["Version"] == "2012-10-17"
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    assert len(by_sid) == len(policy["Statement"]), "Sids are unique"
    return by_sid


def resources(statement: dict[str, Any]) -> list[str]:
    r = statement["Resource"]
    return [r] if isinstance(r, str) else r


def test_every_statement_allows_and_no_write_is_granted_on_star() -> None:
    for sid, s in statements().items():
        assert s["Effect"] == "Allow"
        actions = s["Action"]
        if resources(s) == ["*"]:
            assert all(":Describe" in a or a == "pricing:GetProducts" for a in actions), sid


def test_pricing_is_read_anywhere_without_a_region_condition() -> None:
    """The Pricing API answers from its own regions (us-east-1, ...), not the cluster's."""
    pricing = statements()["AllowPricingReadActions"]
    assert (pricing["Action"], pricing["Resource"], "Condition" in pricing) == (["pricing:GetProducts"], "*", False)


def test_create_tags_in_the_launch_calls_and_claim_tags_on_this_clusters_instances() -> None:
    tagging = [s for s in statements().values() if "ec2:CreateTags" in s["Action"]]
    assert [s["Sid"] for s in tagging] == ["AllowScopedResourceCreationTagging", "AllowScopedInstanceClaimTagging"]
    claim_tags = tagging[1]
    assert claim_tags["Resource"] == "arn:aws:ec2:eu-west-1:111122223333:instance/*"
    assert claim_tags["Condition"]["StringEquals"]["aws:ResourceTag/kubernetes.io/cluster/prod"] == "owned"
    assert claim_tags["Condition"]["StringLike"] == {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    assert claim_tags["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": ["Name", "karpenter.sh/nodeclaim"]}
    condition = tagging[0]["Condition"]
    assert condition["StringEquals"]["ec2:CreateAction"] == ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]
    assert condition["StringEquals"]["aws:RequestTag/kubernetes.io/cluster/prod"] == "owned"
    assert condition["StringEquals"]["aws:RequestTag/eks:eks-cluster-name"] == "prod"
    assert condition["StringLike"] == {"aws:RequestTag/karpenter.sh/nodepool": "*"}


def test_launches_create_only_tagged_resources_and_use_only_tagged_templates() -> None:
    s = statements()
    created = s["AllowScopedEC2InstanceActionsWithTags"]
    assert created["Action"] == ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"]
    assert "arn:aws:ec2:eu-west-1:111122223333:instance/*" in resources(created)
    assert created["Condition"]["StringEquals"]["aws:RequestTag/kubernetes.io/cluster/prod"] == "owned"
    assert created["Condition"]["StringLike"] == {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    template = s["AllowScopedEC2LaunchTemplateAccessActions"]
    assert resources(template) == ["arn:aws:ec2:eu-west-1:111122223333:launch-template/*"]
    assert template["Condition"]["StringEquals"]["aws:ResourceTag/kubernetes.io/cluster/prod"] == "owned"
    assert template["Condition"]["StringLike"] == {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    used = s["AllowScopedEC2InstanceAccessActions"]
    assert "Condition" not in used or set(used["Condition"]["StringEquals"]) == {"aws:RequestedRegion"}
    assert sorted(resources(used)) == [
        "arn:aws:ec2:eu-west-1:*:capacity-reservation/*",  # any account: shared VPCs, reservations, groups
        "arn:aws:ec2:eu-west-1:*:placement-group/*",
        "arn:aws:ec2:eu-west-1:*:security-group/*",
        "arn:aws:ec2:eu-west-1:*:subnet/*",
        "arn:aws:ec2:eu-west-1::image/*",
        "arn:aws:ec2:eu-west-1::snapshot/*",
    ]


def test_terminate_and_delete_templates_only_of_this_cluster_and_a_nodepool() -> None:
    deletion = statements()["AllowScopedDeletion"]
    assert deletion["Action"] == ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"]
    assert resources(deletion) == [
        "arn:aws:ec2:eu-west-1:111122223333:instance/*",
        "arn:aws:ec2:eu-west-1:111122223333:launch-template/*",
    ]
    assert deletion["Condition"]["StringEquals"]["aws:ResourceTag/kubernetes.io/cluster/prod"] == "owned"
    assert deletion["Condition"]["StringLike"] == {"aws:ResourceTag/karpenter.sh/nodepool": "*"}


def test_ssm_reads_only_the_public_aws_parameters() -> None:
    assert resources(statements()["AllowSSMReadActions"]) == ["arn:aws:ssm:eu-west-1::parameter/aws/service/*"]


def test_pass_role_only_for_the_node_role_and_only_to_the_partitions_ec2() -> None:
    default = statements()["AllowPassingInstanceRole"]
    assert resources(default) == ["arn:aws:iam::111122223333:role/KarpenterNodeRole-prod"]
    assert default["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    named = statements(node_role="nodes", partition="aws-cn")["AllowPassingInstanceRole"]
    assert resources(named) == ["arn:aws-cn:iam::111122223333:role/nodes"]
    assert named["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com.cn"}}
    placeholder = statements(partition="${AWS_PARTITION}")["AllowPassingInstanceRole"]
    assert placeholder["Condition"]["StringEquals"]["iam:PassedToService"] == [
        "ec2.amazonaws.com",
        "ec2.amazonaws.com.cn",
    ]


def test_instance_profiles_request_tags_on_create_resource_and_request_tags_to_tag_resource_tags_on_the_rest() -> None:
    s = statements()
    create = s["AllowScopedInstanceProfileCreationActions"]
    assert create["Action"] == ["iam:CreateInstanceProfile"]
    assert create["Condition"]["StringEquals"] == {
        "aws:RequestTag/kubernetes.io/cluster/prod": "owned",
        "aws:RequestTag/eks:eks-cluster-name": "prod",
        "aws:RequestTag/topology.kubernetes.io/region": "eu-west-1",
    }
    assert create["Condition"]["StringLike"] == {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    tag = s["AllowScopedInstanceProfileTagActions"]
    assert tag["Action"] == ["iam:TagInstanceProfile"]
    assert tag["Condition"]["StringEquals"] == {
        f"{prefix}/{key}": value
        for prefix in ("aws:ResourceTag", "aws:RequestTag")
        for key, value in (
            ("kubernetes.io/cluster/prod", "owned"),
            ("eks:eks-cluster-name", "prod"),
            ("topology.kubernetes.io/region", "eu-west-1"),
        )
    }
    assert tag["Condition"]["StringLike"] == {
        "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
        "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
    }
    change = s["AllowScopedInstanceProfileActions"]
    assert change["Action"] == [
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
    ]
    assert change["Condition"]["StringEquals"] == {
        "aws:ResourceTag/kubernetes.io/cluster/prod": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": "eu-west-1",
    }
    assert change["Condition"]["StringLike"] == {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    for sid in ("AllowScopedInstanceProfileCreationActions", "AllowScopedInstanceProfileTagActions",
                "AllowScopedInstanceProfileActions", "AllowInstanceProfileReadActions"):  # fmt: skip
        assert resources(s[sid]) == ["arn:aws:iam::111122223333:instance-profile/*"]


def test_every_regional_statement_requires_the_region_and_iam_ones_do_not() -> None:
    for sid, s in statements().items():
        regional = any(a.split(":")[0] in ("ec2", "ssm", "eks", "sqs") for a in s["Action"])
        assert (s.get("Condition", {}).get("StringEquals", {}).get("aws:RequestedRegion") == "eu-west-1") == regional, (
            sid
        )


def test_defaults_are_any_account_and_region_without_a_region_condition() -> None:
    for s in controller_policy(CLUSTER)["Statement"]:
        assert "aws:RequestedRegion" not in str(s.get("Condition", {}))
        for r in resources(s):
            assert r == "*" or r.startswith("arn:aws:"), r
    s = {s["Sid"]: s for s in controller_policy(CLUSTER)["Statement"]}
    assert resources(s["AllowScopedDeletion"]) == ["arn:aws:ec2:*:*:instance/*", "arn:aws:ec2:*:*:launch-template/*"]
    create = s["AllowScopedInstanceProfileCreationActions"]["Condition"]
    assert "aws:RequestTag/topology.kubernetes.io/region" not in create["StringEquals"]
    assert create["StringLike"]["aws:RequestTag/topology.kubernetes.io/region"] == "*"  # present, any value
    assert resources(s["AllowSSMReadActions"]) == ["arn:aws:ssm:*::parameter/aws/service/*"]


@pytest.mark.parametrize("bad", ["", "two words"])
def test_blank_names_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        controller_policy(bad)
    with pytest.raises(ValueError):
        controller_policy(CLUSTER, region=bad)


def test_needed_actions_add_what_aws_authorizes_with_a_call() -> None:
    assert needed_actions({"ec2:CreateFleet"}) == {"ec2:CreateFleet", *IMPLIED_ACTIONS["ec2:CreateFleet"]}
    assert needed_actions({"ec2:DescribeImages"}) == {"ec2:DescribeImages"}


def test_describe_cluster_is_granted_on_this_cluster_only() -> None:
    statement = statements()["AllowAPIServerEndpointDiscovery"]
    assert statement["Action"] == ["eks:DescribeCluster"]
    assert resources(statement) == [f"arn:aws:eks:eu-west-1:111122223333:cluster/{CLUSTER}"]


def test_the_interruption_queue_is_read_and_acked_on_that_queue_only() -> None:
    statement = statements()["AllowInterruptionQueueActions"]
    assert statement["Action"] == ["sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"]
    assert resources(statement) == [f"arn:aws:sqs:eu-west-1:111122223333:{CLUSTER}"]  # by default the cluster's name
    named = statements(interruption_queue="prod-interruptions")["AllowInterruptionQueueActions"]
    assert resources(named) == ["arn:aws:sqs:eu-west-1:111122223333:prod-interruptions"]
