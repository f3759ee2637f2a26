"""The controller policy, evaluated (tests/iam_eval.py) on every AWS request the worker makes and on attacks.

Each case is one call nodeflow makes, as the requests AWS authorizes for it: the action and the ones AWS
authorizes with it (`IMPLIED_ACTIONS`), on each resource it touches (ARN), with the tags the request sends
(`aws:RequestTag/*`, `aws:TagKeys`), the resource's existing tags (`aws:ResourceTag/*`) and the region
(`aws:RequestedRegion`). The requests are built from what the product sends: the launch calls from
`cloudprovider.aws.launch.authorization.dry_runs` (which builds CreateFleet, CreateLaunchTemplate and
RunInstances as a launch sends them, with `ClusterInfo.tags`), the batched CreateFleet and its per-claim
CreateTags from `cloudprovider.aws.launch.fleet_batcher`, the template's tags from `LaunchTemplateSpec`, the
profile's from `InstanceProfiles.create_request`. How EC2 authorizes a launch is modelled from its
documentation (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ExamplePolicies_EC2.html): the launch
action on every resource it creates (with that resource type's TagSpecifications as request tags) and
uses (image, subnet, security group, launch template with its tags), `ec2:CreateTags` with
`ec2:CreateAction` on each tagged new resource, and `iam:PassRole` of the profile's role to EC2. An
instance profile created with tags is also authorized for `iam:TagInstanceProfile`, modelled on the
profile as created (its tags are the request's). Spot launches' spot-instances-request resources are not
modelled.

The moto server of the local stack enforces the same policy by action only (devstack/aws/access.py);
this test is where the conditions and resources are checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from cloudprovider.aws.iam_policy import API_ACTIONS, IMPLIED_ACTIONS, REGIONAL_READS, controller_policy
from cloudprovider.aws.launch.authorization import dry_runs
from cloudprovider.aws.launch.create import ClusterInfo
from cloudprovider.aws.launch.fleet_batcher import per_claim_tags, shared_request
from cloudprovider.aws.launch.launchtemplate import LaunchTemplateSpec
from cloudprovider.aws.nodeclass.amis import alias_parameters
from cloudprovider.aws.nodeclass.cluster import ClusterConnection
from cloudprovider.aws.nodeclass.instanceprofile import InstanceProfiles, profile_tags
from cloudprovider.types import TAG_NAME, ResolvedNodeClass
from tests.iam_eval import Request, allowing_sids, evaluate, tag_context
from tests.unit.cloudprovider.builders import node_class

CLUSTER = "nodeflow-dev"
ACCOUNT = "123456789012"
REGION = "us-west-2"
OTHER_REGION = "eu-west-1"
VPC_OWNER = "999988887777"  # the account a shared VPC's subnets and security groups belong to
NODE_ROLE = f"KarpenterNodeRole-{CLUSTER}"
PROFILE = f"{CLUSTER}_123"
NODE_CLASS = node_class(role=NODE_ROLE, tags={"team": "web"})


@dataclass(frozen=True)
class Where:
    """The partition, region and accounts requests are made in."""

    partition: str = "aws"
    region: str = REGION
    account: str = ACCOUNT
    vpc_account: str = ACCOUNT

    def ec2(self, kind: str, rid: str, account: str | None = None) -> str:
        owner = "" if kind in ("image", "snapshot") else (self.account if account is None else account)
        return f"arn:{self.partition}:ec2:{self.region}:{owner}:{kind}/{rid}"

    def iam(self, kind: str, name: str) -> str:
        return f"arn:{self.partition}:iam::{self.account}:{kind}/{name}"

    @property
    def ec2_principal(self) -> str:
        return "ec2.amazonaws.com.cn" if self.partition == "aws-cn" else "ec2.amazonaws.com"


HERE = Where()


def tags_of(tag_list: Sequence[Mapping[str, str]]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tag_list}


def launch_tags(claim: str = "claim-1", pool: str = "default") -> dict[str, str]:
    return ClusterInfo(REGION, ClusterConnection(CLUSTER)).tags(NODE_CLASS, claim, pool)


def resolved() -> ResolvedNodeClass:
    return ResolvedNodeClass(
        subnets=[{"id": "subnet-1", "zone": f"{REGION}a", "zoneID": "usw2-az1"}],
        security_groups=[{"id": "sg-1", "name": "nodes"}],
        amis=[{"id": "ami-1", "name": "al2023", "arch": "x86_64", "variant": "standard"}],
        instance_profile=PROFILE,
    )


def product_requests() -> dict[str, dict[str, Any]]:
    """CreateFleet, CreateLaunchTemplate and RunInstances as the product builds them."""
    return {run.operation: run.request for run in dry_runs(NODE_CLASS, resolved(), "", launch_tags())}


def template_spec() -> LaunchTemplateSpec:
    return LaunchTemplateSpec(
        image_id="ami-1",
        user_data="",
        security_group_ids=("sg-1",),
        instance_profile=PROFILE,
        node_class=NODE_CLASS,
        family="AL2023",
        tags=tuple(launch_tags().items()),
    )


def created(
    where: Where, action: str, request: Mapping[str, Any], extra_specs: Sequence[Mapping[str, Any]] = ()
) -> list[Request]:
    """The launch action and `ec2:CreateTags` (with `ec2:CreateAction`) on each resource the request's
    TagSpecifications (and `extra_specs`, a template's) tag, with those tags as request tags."""
    out = []
    for spec in [*request.get("TagSpecifications", []), *extra_specs]:
        arn = where.ec2(spec["ResourceType"], "new")
        context = tag_context(region=where.region, request_tags=tags_of(spec["Tags"]))
        out.append(Request(action, arn, context))
        out.append(Request("ec2:CreateTags", arn, {**context, "ec2:CreateAction": action.split(":")[1]}))
    return out


def used(where: Where, actions: Sequence[str], template_tags: Mapping[str, str] | None) -> list[Request]:
    """The launch actions on what a launch uses: image, subnet, security group, the template (its tags)."""
    region = tag_context(region=where.region)
    resources = [
        where.ec2("image", "ami-1"),
        where.ec2("subnet", "subnet-1", where.vpc_account),
        where.ec2("security-group", "sg-1", where.vpc_account),
    ]
    out = [Request(a, r, region) for a in actions for r in resources]
    if template_tags is not None:
        context = tag_context(region=where.region, resource_tags=template_tags)
        out += [Request(a, where.ec2("launch-template", "lt-1"), context) for a in actions]
    return out


def pass_role(where: Where, role: str = NODE_ROLE, service: str | None = None) -> Request:
    return Request("iam:PassRole", where.iam("role", role), {"iam:PassedToService": service or where.ec2_principal})


def fleet_requests(where: Where, fleet: Mapping[str, Any]) -> list[Request]:
    """An instant CreateFleet: it creates the fleet, instances, volumes and network interfaces (tagged by the
    template), and launches through RunInstances with the template and the profile's role."""
    template = template_spec()
    nic_specs = template.data()["TagSpecifications"]
    actions = ("ec2:CreateFleet", "ec2:RunInstances")
    return [
        *created(where, "ec2:CreateFleet", fleet, nic_specs),
        *created(where, "ec2:RunInstances", {"TagSpecifications": []}, nic_specs),
        *used(where, actions, dict(template.resource_tags())),
        pass_role(where),
    ]


def run_instances_requests(where: Where) -> list[Request]:
    """The dry-run RunInstances: the template's data inline, tagging network interfaces, instances and volumes."""
    run = product_requests()["RunInstances"]
    return [*created(where, "ec2:RunInstances", run), *used(where, ("ec2:RunInstances",), None), pass_role(where)]


def launch_template_requests(where: Where) -> list[Request]:
    return created(where, "ec2:CreateLaunchTemplate", template_spec().create_request())


def profile_request(where: Where, action: str, tags: Mapping[str, str] | None) -> Request:
    return Request(action, where.iam("instance-profile", PROFILE), tag_context(resource_tags=tags))


def create_profile_requests(where: Where, region: str | None = None) -> list[Request]:
    """CreateInstanceProfile with the tags InstanceProfiles sends, and the TagInstanceProfile AWS authorizes
    with it (on the profile as created, carrying those tags)."""
    sent = InstanceProfiles(None, CLUSTER, region or where.region).create_request(
        PROFILE, NODE_CLASS.name, NODE_CLASS.spec.tags
    )  # type: ignore[arg-type]
    tags = tags_of(sent["Tags"])
    arn = where.iam("instance-profile", sent["InstanceProfileName"])
    return [
        Request("iam:CreateInstanceProfile", arn, tag_context(request_tags=tags)),
        Request("iam:TagInstanceProfile", arn, tag_context(request_tags=tags, resource_tags=tags)),
    ]


def ours(region: str = REGION) -> dict[str, str]:
    return profile_tags(CLUSTER, region, NODE_CLASS.name, NODE_CLASS.spec.tags)


def cases(where: Where = HERE) -> dict[str, tuple[str, list[Request]]]:
    """Every call the worker makes: name -> (the call's action, the requests AWS authorizes for it)."""
    region = tag_context(region=where.region)
    fleet = product_requests()["CreateFleet"]
    batched = shared_request(fleet, 2, "token")
    instance = where.ec2("instance", "i-1")
    full_tags = launch_tags()
    table: dict[str, tuple[str, list[Request]]] = {f"read {a}": (a, [Request(a, "*", region)]) for a in REGIONAL_READS}
    parameter = alias_parameters("al2023@latest", "1.32")[0]
    table |= {
        "an AMI alias's SSM parameter": (
            "ssm:GetParameter",
            [
                Request(
                    "ssm:GetParameter", f"arn:{where.partition}:ssm:{where.region}::parameter{parameter.name}", region
                )
            ],
        ),
        "on-demand prices (the Pricing API's own region)": (
            "pricing:GetProducts",
            [Request("pricing:GetProducts", "*", tag_context(region="us-east-1"))],
        ),
        "the cluster's endpoint": (
            "eks:DescribeCluster",
            [
                Request(
                    "eks:DescribeCluster",
                    f"arn:{where.partition}:eks:{where.region}:{where.account}:cluster/{CLUSTER}",
                    region,
                )
            ],
        ),
        **{
            f"interruption queue {a}": (
                a,
                [Request(a, f"arn:{where.partition}:sqs:{where.region}:{where.account}:{CLUSTER}", region)],
            )
            for a in ("sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage")
        },
        "a claim's CreateFleet": ("ec2:CreateFleet", fleet_requests(where, fleet)),
        "a batched CreateFleet (shared tags only)": ("ec2:CreateFleet", fleet_requests(where, batched)),
        "the dry-run CreateFleet (ValidationSucceeded)": ("ec2:CreateFleet", fleet_requests(where, fleet)),
        "the dry-run RunInstances (ValidationSucceeded)": ("ec2:RunInstances", run_instances_requests(where)),
        "a launch template": ("ec2:CreateLaunchTemplate", launch_template_requests(where)),
        "a batched claim's per-claim tags": (
            "ec2:CreateTags",
            [
                Request(
                    "ec2:CreateTags",
                    instance,
                    tag_context(
                        region=where.region,
                        request_tags=tags_of(per_claim_tags(fleet)),
                        resource_tags=tags_of(batched["TagSpecifications"][0]["Tags"]),
                    ),
                )
            ],
        ),
        "naming an instance after its Node (claim sweep)": (
            "ec2:CreateTags",
            [
                Request(
                    "ec2:CreateTags",
                    instance,
                    tag_context(region=where.region, request_tags={TAG_NAME: "ip-10-0-0-1"}, resource_tags=full_tags),
                )
            ],
        ),
        "terminating a claim's instance": (
            "ec2:TerminateInstances",
            [Request("ec2:TerminateInstances", instance, tag_context(region=where.region, resource_tags=full_tags))],
        ),
        "deleting a stale launch template": (
            "ec2:DeleteLaunchTemplate",
            [
                Request(
                    "ec2:DeleteLaunchTemplate",
                    where.ec2("launch-template", "lt-1"),
                    tag_context(region=where.region, resource_tags=dict(template_spec().resource_tags())),
                )
            ],
        ),
        "reading a profile": ("iam:GetInstanceProfile", [profile_request(where, "iam:GetInstanceProfile", None)]),
        "creating the node class's profile": ("iam:CreateInstanceProfile", create_profile_requests(where)),
        "adding the role to it": (
            "iam:AddRoleToInstanceProfile",
            [profile_request(where, "iam:AddRoleToInstanceProfile", ours(where.region)), pass_role(where)],
        ),
        "taking over a profile Karpenter made for the node class": (
            "iam:RemoveRoleFromInstanceProfile",
            [
                profile_request(
                    where, "iam:RemoveRoleFromInstanceProfile", {**ours(where.region), "karpenter.sh/other": "x"}
                )
            ],
        ),
        "removing the old role from it": (
            "iam:RemoveRoleFromInstanceProfile",
            [profile_request(where, "iam:RemoveRoleFromInstanceProfile", ours(where.region))],
        ),
        "deleting it with its node class": (
            "iam:DeleteInstanceProfile",
            [profile_request(where, "iam:DeleteInstanceProfile", ours(where.region))],
        ),
    }
    return table


def denied(policy: Mapping[str, Any], requests: Sequence[Request]) -> list[str]:
    return [f"{r.action} on {r.resource} with {dict(r.context)}" for r in requests if evaluate(policy, r) != "Allow"]


POLICY = controller_policy(CLUSTER, account=ACCOUNT, region=REGION)


@pytest.mark.parametrize("name", sorted(cases()))
def test_every_call_the_worker_makes_is_allowed(name: str) -> None:
    _, requests = cases()[name]
    assert denied(POLICY, requests) == []


def test_every_call_in_api_actions_has_a_case_with_the_actions_aws_authorizes_with_it() -> None:
    """A call added to API_ACTIONS (the product's code scan, test_iam_policy_calls, keeps it complete)
    without a case here fails: add the case with the tags the new call sends."""
    table = cases()
    assert {call for call, _ in table.values()} == set(API_ACTIONS)
    for name, (call, requests) in table.items():
        assert {call, *IMPLIED_ACTIONS.get(call, ())} <= {r.action for r in requests}, name


def test_the_launch_tags_requests_send_are_the_products() -> None:
    """The cases see what the product sends: the cluster's ownership tags and the node class's own."""
    fleet = product_requests()["CreateFleet"]
    instance_tags = tags_of(fleet["TagSpecifications"][0]["Tags"])
    assert instance_tags["kubernetes.io/cluster/nodeflow-dev"] == "owned"
    assert instance_tags["eks:eks-cluster-name"] == CLUSTER
    assert instance_tags["team"] == "web"
    assert {r.action for r in cases()["a claim's CreateFleet"][1]} == {
        "ec2:CreateFleet",
        "ec2:RunInstances",
        "ec2:CreateTags",
        "iam:PassRole",
    }


CLUSTER_REQUEST_TAGS = {f"kubernetes.io/cluster/{CLUSTER}": "owned", "karpenter.sh/nodepool": "default"}
ATTACKS: dict[str, list[Request]] = {
    "tag a foreign instance with the cluster tag": [
        Request(
            "ec2:CreateTags",
            HERE.ec2("instance", "i-foreign"),
            tag_context(region=REGION, request_tags=CLUSTER_REQUEST_TAGS, resource_tags={"team": "db"}),
        ),
        Request(  # even with ec2:CreateAction spelled in: it is set by EC2, never by a CreateTags request
            "ec2:CreateTags",
            HERE.ec2("instance", "i-foreign"),
            tag_context(region=REGION, request_tags=CLUSTER_REQUEST_TAGS),
        ),
    ],
    "terminate a foreign instance": [
        Request("ec2:TerminateInstances", HERE.ec2("instance", "i-foreign"), tag_context(region=REGION)),
        Request(
            "ec2:TerminateInstances",
            HERE.ec2("instance", "i-foreign"),
            tag_context(region=REGION, resource_tags={f"kubernetes.io/cluster/{CLUSTER}": "owned"}),  # no nodepool
        ),
    ],
    "tag a foreign instance profile with nodeflow's tags": [
        Request(
            "iam:TagInstanceProfile",
            HERE.iam("instance-profile", "theirs"),
            tag_context(request_tags=ours(), resource_tags={"team": "db"}),
        )
    ],
    "remove a foreign profile's role": [
        Request("iam:RemoveRoleFromInstanceProfile", HERE.iam("instance-profile", "theirs"), tag_context()),
    ],
    "delete a foreign profile": [
        Request("iam:DeleteInstanceProfile", HERE.iam("instance-profile", "theirs"), tag_context()),
    ],
    "create a profile for another region": [create_profile_requests(HERE, region=OTHER_REGION)[0]],
    "retag a profile of another region as this one's": [
        Request(
            "iam:TagInstanceProfile",
            HERE.iam("instance-profile", "theirs"),
            tag_context(request_tags=ours(), resource_tags=ours(OTHER_REGION)),
        )
    ],
    "delete the same cluster name's profile in another region": [
        profile_request(HERE, "iam:DeleteInstanceProfile", ours(OTHER_REGION)),
        profile_request(HERE, "iam:RemoveRoleFromInstanceProfile", ours(OTHER_REGION)),
    ],
    "launch in another region": [
        r
        for r in fleet_requests(Where(region=OTHER_REGION), product_requests()["CreateFleet"])
        if r.action != "iam:PassRole"
    ],
    "describe in another region": [Request("ec2:DescribeInstances", "*", tag_context(region=OTHER_REGION))],
    "terminate this cluster's instance in another region": [
        Request(
            "ec2:TerminateInstances",
            Where(region=OTHER_REGION).ec2("instance", "i-1"),
            tag_context(region=OTHER_REGION, resource_tags=launch_tags()),
        )
    ],
    "pass the node role to another service": [pass_role(HERE, service="lambda.amazonaws.com")],
    "pass another role": [pass_role(HERE, role="admin")],
    "create a launch template without the tags": [
        Request(
            "ec2:CreateLaunchTemplate",
            HERE.ec2("launch-template", "new"),
            tag_context(region=REGION, request_tags={"team": "web"}),
        ),
        Request("ec2:CreateLaunchTemplate", HERE.ec2("launch-template", "new"), tag_context(region=REGION)),
    ],
    "delete a launch template without the tags": [
        Request("ec2:DeleteLaunchTemplate", HERE.ec2("launch-template", "lt-theirs"), tag_context(region=REGION)),
    ],
    "launch with a template not of this cluster": [
        Request("ec2:RunInstances", HERE.ec2("launch-template", "lt-theirs"), tag_context(region=REGION)),
    ],
    "read the account's own SSM parameters": [
        Request("ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/db-password", tag_context(region=REGION))
    ],
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attacks_are_denied(attack: str) -> None:
    for request in ATTACKS[attack]:
        assert evaluate(POLICY, request) == "ImplicitDeny", (request, allowing_sids(POLICY, request))


def test_aws_cn_allows_the_same_calls_with_its_arns_and_ec2_principal() -> None:
    cn = Where(partition="aws-cn", region="cn-north-1")
    policy = controller_policy(CLUSTER, account=ACCOUNT, region="cn-north-1", partition="aws-cn")
    for name, (_, requests) in cases(cn).items():
        assert denied(policy, requests) == [], name
    assert evaluate(policy, pass_role(cn, service="ec2.amazonaws.com")) == "ImplicitDeny"
    assert evaluate(policy, pass_role(HERE)) == "ImplicitDeny"  # the aws partition's role ARN


def test_a_shared_vpcs_subnets_and_security_groups_of_another_account_may_be_used() -> None:
    shared = Where(vpc_account=VPC_OWNER)
    fleet = product_requests()["CreateFleet"]
    assert denied(POLICY, fleet_requests(shared, fleet)) == []
    assert denied(POLICY, run_instances_requests(shared)) == []
    # what a launch creates stays the cluster account's
    elsewhere = HERE.ec2("instance", "new", account=VPC_OWNER)
    tags = tag_context(region=REGION, request_tags=launch_tags())
    assert evaluate(POLICY, Request("ec2:RunInstances", elsewhere, tags)) == "ImplicitDeny"
