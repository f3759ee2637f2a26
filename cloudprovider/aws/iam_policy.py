"""The controller's least-privilege IAM policy, built from names (pure: no I/O, no AWS SDK).

`controller_policy(cluster_name, ...)` returns the policy document `nodeflow iam-policy` prints. It is
scoped the way Karpenter's getting-started CloudFormation template scopes its controller policy
(https://karpenter.sh/docs/reference/cloudformation/): launches only with this cluster's and a
NodePool's tags on what they create, deletes only what carries those tags, reads only in the region.
Statements, by Sid:

- `AllowRegionalReadActions`: the EC2 Describe calls nodeflow makes (instance types, offerings, spot
  prices, subnets, security groups, images, launch templates, instances, instance status checks, the
  capacity reservations and placement groups EC2NodeClasses select), in the region only.
- `AllowSSMReadActions`: `ssm:GetParameter` on the public AWS parameters (`/aws/service/*`) where the
  EKS-optimised AMI ids of the AMI aliases live; never on the account's own parameters.
- `AllowScopedEC2InstanceAccessActions`: `RunInstances`/`CreateFleet` may *use* any image, snapshot,
  security group, subnet, placement group and capacity reservation of the region, of any account: they
  are read, not created, and the node class selects them. Subnets and security groups of a VPC shared
  through AWS RAM belong to the VPC owner's account, not the cluster's
  (https://docs.aws.amazon.com/vpc/latest/userguide/vpc-sharing.html), which is why Karpenter's template
  leaves their account `*`; placement groups and capacity reservations can be shared the same way.
- `AllowScopedEC2LaunchTemplateAccessActions`: a launch may use a launch template only when the
  template carries `kubernetes.io/cluster/<cluster>=owned` and a `karpenter.sh/nodepool` tag (nodeflow
  tags the templates it creates so).
- `AllowScopedEC2InstanceActionsWithTags`: `RunInstances`, `CreateFleet` and `CreateLaunchTemplate` may
  *create* fleets, instances, volumes, network interfaces, launch templates and spot requests only when
  the request tags them `kubernetes.io/cluster/<cluster>=owned`, `eks:eks-cluster-name=<cluster>` and
  `karpenter.sh/nodepool=<any>`.
- `AllowScopedResourceCreationTagging`: `ec2:CreateTags` only as part of those three launch calls
  (`ec2:CreateAction`), with the same tags: the role can tag what it creates, never an existing
  resource. (The old policy let it tag any instance with the cluster tag and then terminate it.)
- `AllowScopedInstanceClaimTagging`: `ec2:CreateTags` on an existing instance only when it already
  carries `kubernetes.io/cluster/<cluster>=owned` and a `karpenter.sh/nodepool` tag, and only with the
  keys `Name` and `karpenter.sh/nodeclaim`: launches batched into one CreateFleet share its tags, and
  each claim's instance gets these two afterwards (`cloudprovider.aws.launch.fleet_batcher`); the claim sweep
  renames a registered instance after its Node (activities.nodeclaim.sweep). Neither key is one a launch, a
  template use or a termination is scoped by.
- `AllowScopedDeletion`: `ec2:TerminateInstances` and `ec2:DeleteLaunchTemplate` only on instances and
  launch templates tagged for this cluster and a NodePool (nodeflow deletes its templates when their
  EC2NodeClass is deleted, or when no EC2NodeClass's hash uses them any more).
- `AllowPassingInstanceRole`: `iam:PassRole` for the node role only, and only to the partition's EC2
  service principal (`iam:PassedToService`: `ec2.amazonaws.com`, `ec2.amazonaws.com.cn` in aws-cn: the
  service's name ends with the partition's DNS suffix, which Karpenter's template writes
  `ec2.${AWS::URLSuffix}` for the node role's trust policy; for a partition not known here, such as a
  placeholder, both, as Karpenter's controller policy lists them) (launching with an instance profile,
  adding the role to a profile).
- `AllowScopedInstanceProfileCreationActions`: `iam:CreateInstanceProfile` only with the tags Karpenter
  v1 requires and nodeflow writes (`cloudprovider.aws.nodeclass.instanceprofile.profile_tags`):
  `kubernetes.io/cluster/<cluster>=owned`, `eks:eks-cluster-name=<cluster>`,
  `topology.kubernetes.io/region=<region>` and a `karpenter.k8s.aws/ec2nodeclass` tag (other keys may
  come from the node class's `spec.tags`, as in Karpenter).
- `AllowScopedInstanceProfileTagActions`: `iam:TagInstanceProfile`, which AWS authorizes with a
  CreateInstanceProfile that carries tags, only when the profile already carries the cluster,
  EKS cluster name, region and node class tags *and* the request writes them: the role cannot put
  nodeflow's tags on a profile it did not make (and then remove its role and delete it).
- `AllowScopedInstanceProfileActions`: `iam:AddRoleToInstanceProfile`, and
  `iam:RemoveRoleFromInstanceProfile` (a changed `spec.role`, or an EC2NodeClass deleted) with
  `iam:DeleteInstanceProfile` (an EC2NodeClass deleted), only on profiles carrying the cluster, region and
  node class tags (the ones nodeflow or Karpenter created for this cluster in this region).

IAM is global: with a region given, every profile statement also requires the
`topology.kubernetes.io/region` tag to name it (on the request when creating, on the profile when
changing), as Karpenter's does, so two clusters of the same name in two regions cannot change or delete
each other's profiles. Without a region the region tag must be present, with any value.
- `AllowInstanceProfileReadActions`: `iam:GetInstanceProfile` on any profile: it asks before creating
  (a missing profile must answer NoSuchEntity, not AccessDenied) and reads a `spec.instanceProfile` the
  user created.

`aws:RequestedRegion` is required on every EC2, SSM, EKS and SQS statement when a region is given; IAM is global.
- `AllowAPIServerEndpointDiscovery`: `eks:DescribeCluster` on this cluster only: the worker reads the
  endpoint, CA bundle and service CIDR the nodes' user data needs, unless the settings give them all.
- `AllowInterruptionQueueActions`: `sqs:GetQueueUrl`, `sqs:ReceiveMessage` and `sqs:DeleteMessage` on
  the interruption queue only (`arn:<partition>:sqs:<region>:<account>:<queue>`, the queue named by the
  worker's `interruption_queue` setting, by default the cluster's name), as Karpenter's
  `AllowInterruptionQueueActions` (which also grants `sqs:GetQueueAttributes`, which nodeflow never calls).

- `AllowPricingReadActions`: `pricing:GetProducts` on any product, as Karpenter's: the worker reads the
  region's on-demand prices from the AWS Pricing API (cloudprovider.aws.pricing.api). No
  `aws:RequestedRegion` condition: the Pricing API answers from its own few regions (us-east-1,
  eu-central-1, ap-south-1), not the cluster's. Without it the shipped price table is used.

`API_ACTIONS` are the calls nodeflow makes; `IMPLIED_ACTIONS` the permissions AWS checks as part of one
of them, which are never called on their own. The tests hold the policy to exactly these.
"""

from __future__ import annotations

from typing import Any

from apis.labels import NODECLASS, REGION
from cloudprovider.types import (
    TAG_CLUSTER_PREFIX,
    TAG_EKS_CLUSTER_NAME,
    TAG_NAME,
    TAG_NODECLAIM,
    TAG_NODEPOOL,
)

REGIONAL_READS = (
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceStatus",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
)
LAUNCH_CALLS = ("ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate")
INTERRUPTION_QUEUE_CALLS = ("sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage")

# Every AWS operation nodeflow calls ("service:Action").
API_ACTIONS = frozenset(
    {
        *REGIONAL_READS,
        "ssm:GetParameter",
        "pricing:GetProducts",
        "eks:DescribeCluster",
        "ec2:CreateFleet",
        "ec2:RunInstances",  # with DryRun only: ValidationSucceeded (cloudprovider.aws.launch.authorization)
        "ec2:CreateTags",
        "ec2:CreateLaunchTemplate",
        "ec2:TerminateInstances",
        "ec2:DeleteLaunchTemplate",
        "iam:GetInstanceProfile",
        "iam:CreateInstanceProfile",
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
        *INTERRUPTION_QUEUE_CALLS,
    }
)

# Operation -> the further actions AWS authorizes when nodeflow calls it (as nodeflow calls it).
IMPLIED_ACTIONS: dict[str, tuple[str, ...]] = {
    # An instant fleet launches through RunInstances, tags at creation and passes the profile's role.
    "ec2:CreateFleet": ("ec2:RunInstances", "ec2:CreateTags", "iam:PassRole"),
    "ec2:CreateLaunchTemplate": ("ec2:CreateTags",),  # TagSpecifications
    "iam:CreateInstanceProfile": ("iam:TagInstanceProfile",),  # Tags
    "iam:AddRoleToInstanceProfile": ("iam:PassRole",),
}


# The DNS suffix of each partition's service names (`AWS::URLSuffix` in CloudFormation):
# https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/pseudo-parameter-reference.html
URL_SUFFIXES = {
    "aws": "amazonaws.com",
    "aws-cn": "amazonaws.com.cn",
    "aws-us-gov": "amazonaws.com",
    "aws-iso": "c2s.ic.gov",
    "aws-iso-b": "sc2s.sgov.gov",
}


def ec2_service_principals(partition: str) -> list[str]:
    """The EC2 service principal the node role is passed to in `partition` (`ec2.<URL suffix>`); for a
    partition not in URL_SUFFIXES (a placeholder such as `${AWS_PARTITION}`), the commercial and China
    ones, as Karpenter's controller policy lists them."""
    if partition in URL_SUFFIXES:
        return [f"ec2.{URL_SUFFIXES[partition]}"]
    return ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]


def needed_actions(called: set[str] | frozenset[str]) -> set[str]:
    """`called` and the actions AWS authorizes as part of them."""
    return set(called) | {a for c in called for a in IMPLIED_ACTIONS.get(c, ())}


def controller_policy(
    cluster_name: str,
    *,
    account: str = "*",
    region: str = "*",
    partition: str = "aws",
    node_role: str | None = None,
    interruption_queue: str | None = None,
) -> dict[str, Any]:
    """The policy document for the controller of `cluster_name` (see the module docstring).

    `account` and `region` default to "*" (any); with region "*" there is no `aws:RequestedRegion`
    condition. `node_role` is the role name of the nodes (EC2NodeClass `spec.role`), by default
    `KarpenterNodeRole-<cluster_name>`; `interruption_queue` the SQS queue's name, by default
    `cluster_name`. Raises ValueError for an empty or blank name."""
    queue = interruption_queue or cluster_name
    for label, value in (
        ("cluster_name", cluster_name),
        ("interruption_queue", queue),
        ("account", account),
        ("region", region),
        ("partition", partition),
    ):
        if not value or any(c.isspace() for c in value):
            raise ValueError(f"{label} {value!r} must be a non-empty name without spaces")
    role = node_role or f"KarpenterNodeRole-{cluster_name}"
    ec2 = f"arn:{partition}:ec2:{region}"
    iam = f"arn:{partition}:iam::{account}"
    cluster_tag = TAG_CLUSTER_PREFIX + cluster_name
    principals = ec2_service_principals(partition)
    passed_to: str | list[str] = principals[0] if len(principals) == 1 else principals
    in_region = {"StringEquals": {"aws:RequestedRegion": region}} if region != "*" else {}
    request_tags = {
        "StringEquals": {
            f"aws:RequestTag/{cluster_tag}": "owned",
            f"aws:RequestTag/{TAG_EKS_CLUSTER_NAME}": cluster_name,
        },
        "StringLike": {f"aws:RequestTag/{TAG_NODEPOOL}": "*"},
    }
    resource_tags = {
        "StringEquals": {f"aws:ResourceTag/{cluster_tag}": "owned"},
        "StringLike": {f"aws:ResourceTag/{TAG_NODEPOOL}": "*"},
    }
    created = [
        f"{ec2}:{account}:{kind}/*"
        for kind in ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")
    ]

    # The tags of a profile nodeflow (or Karpenter) made for this cluster, by condition key prefix.
    def profile_condition(*prefixes: str, eks_name: bool = True) -> dict[str, dict[str, str]]:
        equals = {cluster_tag: "owned", **({TAG_EKS_CLUSTER_NAME: cluster_name} if eks_name else {})}
        like = {NODECLASS: "*"}
        if region != "*":
            equals[REGION] = region
        else:
            like[REGION] = "*"
        return {
            "StringEquals": {f"{p}/{k}": v for p in prefixes for k, v in equals.items()},
            "StringLike": {f"{p}/{k}": v for p in prefixes for k, v in like.items()},
        }

    def regional(statement: dict[str, Any]) -> dict[str, Any]:
        condition = dict(statement.get("Condition", {}))
        for operator, values in in_region.items():
            condition[operator] = {**condition.get(operator, {}), **values}
        return {**statement, "Condition": condition} if condition else statement

    statements = [
        regional({"Sid": "AllowRegionalReadActions", "Action": list(REGIONAL_READS), "Resource": "*"}),
        regional(
            {
                "Sid": "AllowSSMReadActions",
                "Action": ["ssm:GetParameter"],
                "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
            }
        ),
        {"Sid": "AllowPricingReadActions", "Action": ["pricing:GetProducts"], "Resource": "*"},
        regional(
            {
                "Sid": "AllowScopedEC2InstanceAccessActions",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Resource": [
                    f"{ec2}::image/*",
                    f"{ec2}::snapshot/*",
                    f"{ec2}:*:security-group/*",
                    f"{ec2}:*:subnet/*",
                    f"{ec2}:*:placement-group/*",
                    f"{ec2}:*:capacity-reservation/*",
                ],
            }
        ),
        regional(
            {
                "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Resource": f"{ec2}:{account}:launch-template/*",
                "Condition": resource_tags,
            }
        ),
        regional(
            {
                "Sid": "AllowScopedEC2InstanceActionsWithTags",
                "Action": list(LAUNCH_CALLS),
                "Resource": created,
                "Condition": request_tags,
            }
        ),
        regional(
            {
                "Sid": "AllowScopedResourceCreationTagging",
                "Action": ["ec2:CreateTags"],
                "Resource": created,
                "Condition": {
                    "StringEquals": {
                        **request_tags["StringEquals"],
                        "ec2:CreateAction": [a.split(":")[1] for a in LAUNCH_CALLS],
                    },
                    "StringLike": request_tags["StringLike"],
                },
            }
        ),
        regional(
            {
                "Sid": "AllowScopedInstanceClaimTagging",
                "Action": ["ec2:CreateTags"],
                "Resource": f"{ec2}:{account}:instance/*",
                "Condition": {
                    **resource_tags,
                    "ForAllValues:StringEquals": {"aws:TagKeys": [TAG_NAME, TAG_NODECLAIM]},
                },
            }
        ),
        regional(
            {
                "Sid": "AllowScopedDeletion",
                "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                "Resource": [f"{ec2}:{account}:instance/*", f"{ec2}:{account}:launch-template/*"],
                "Condition": resource_tags,
            }
        ),
        {
            "Sid": "AllowPassingInstanceRole",
            "Action": ["iam:PassRole"],
            "Resource": f"{iam}:role/{role}",
            "Condition": {"StringEquals": {"iam:PassedToService": passed_to}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Action": ["iam:CreateInstanceProfile"],
            "Resource": f"{iam}:instance-profile/*",
            "Condition": profile_condition("aws:RequestTag"),
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Action": ["iam:TagInstanceProfile"],
            "Resource": f"{iam}:instance-profile/*",
            "Condition": profile_condition("aws:ResourceTag", "aws:RequestTag"),
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Resource": f"{iam}:instance-profile/*",
            "Condition": profile_condition("aws:ResourceTag", eks_name=False),
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Action": ["iam:GetInstanceProfile"],
            "Resource": f"{iam}:instance-profile/*",
        },
        regional(
            {
                "Sid": "AllowAPIServerEndpointDiscovery",
                "Action": ["eks:DescribeCluster"],
                "Resource": f"arn:{partition}:eks:{region}:{account}:cluster/{cluster_name}",
            }
        ),
        regional(
            {
                "Sid": "AllowInterruptionQueueActions",
                "Action": list(INTERRUPTION_QUEUE_CALLS),
                "Resource": f"arn:{partition}:sqs:{region}:{account}:{queue}",
            }
        ),
    ]
    return {"Version": "2012-10-17", "Statement": [{"Sid": s["Sid"], "Effect": "Allow", **s} for s in statements]}
