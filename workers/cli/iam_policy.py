"""`nodeflow iam-policy --cluster-name C`: print the controller's least-privilege IAM policy as JSON
(`cloudprovider.aws.iam_policy.controller_policy`, pure; its docstring explains each statement).

    nodeflow iam-policy --cluster-name prod --account 111122223333 --region eu-west-1 > policy.json
    aws iam put-role-policy --role-name KarpenterControllerRole-prod \\
        --policy-name nodeflow --policy-document file://policy.json

Without --account or --region the ARNs say "*" there (and there is no region condition).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from cloudprovider.aws.iam_policy import controller_policy


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("iam-policy", help="print the controller's least-privilege IAM policy (JSON)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--cluster-name", required=True, help="the EKS cluster (the tags nodeflow writes name it)")
    p.add_argument("--account", default="*", help="the AWS account id (default: any)")
    p.add_argument("--region", default="*", help="the region nodeflow launches in (default: any)")
    p.add_argument("--partition", default="aws", help="aws, aws-cn or aws-us-gov (default: aws)")
    p.add_argument(
        "--node-role",
        default=None,
        help="the nodes' role (EC2NodeClass spec.role; default: KarpenterNodeRole-<cluster>)",
    )
    p.add_argument(
        "--interruption-queue",
        default=None,
        help="the SQS interruption queue's name (the worker's interruption_queue; default: the cluster name)",
    )
    p.set_defaults(func=run)


def render(args: argparse.Namespace) -> str:
    """The policy as printed: two-space indented JSON and a final newline."""
    policy = controller_policy(
        args.cluster_name,
        account=args.account,
        region=args.region,
        partition=args.partition,
        node_role=args.node_role,
        interruption_queue=args.interruption_queue,
    )
    return json.dumps(policy, indent=2) + "\n"


def run(args: argparse.Namespace) -> int:
    try:
        text = render(args)
    except ValueError as error:
        raise SystemExit(f"nodeflow iam-policy: {error}") from error
    print(text, end="")
    return 0
