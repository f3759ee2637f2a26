"""moto enforces a worker policy by action (devstack.aws.access): the controller's key may make only the
calls the policy names, the stack's admin key ("testing") any, also after a reset."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from devstack.aws.access import projection
from devstack.aws.server import MotoServer

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "Reads",
            "Effect": "Allow",
            "Action": ["ec2:DescribeSubnets", "eks:DescribeCluster"],
            "Resource": "arn:aws:ec2:*:*:subnet/*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": "us-west-2"}},
        }
    ],
}


def test_the_projection_keeps_effects_and_actions_on_any_resource_without_conditions() -> None:
    assert projection(POLICY) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Reads",
                "Effect": "Allow",
                "Action": ["ec2:DescribeSubnets", "eks:DescribeCluster"],
                "Resource": "*",
            }
        ],
    }


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    with MotoServer(worker_policy=POLICY) as server:
        yield server


def client(moto: MotoServer, service: str, key: tuple[str, str]) -> object:
    return boto3.client(service, endpoint_url=moto.url, region_name="us-west-2", aws_access_key_id=key[0],
                        aws_secret_access_key=key[1])  # fmt: skip


def test_the_controller_may_make_only_the_policys_calls_and_the_admin_any(moto: MotoServer) -> None:
    assert moto.controller_key is not None
    controller = client(moto, "ec2", moto.controller_key)
    assert controller.describe_subnets()["Subnets"]  # type: ignore[attr-defined]
    assert client(moto, "eks", moto.controller_key).describe_cluster(name=moto.cluster_name)  # type: ignore[attr-defined]
    with pytest.raises(ClientError, match="not authorized to perform: ec2:DescribeInstances") as refused:
        controller.describe_instances()  # type: ignore[attr-defined]
    assert refused.value.response["Error"]["Code"] == "UnauthorizedOperation"  # as EC2 answers
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    admin = client(moto, "ec2", ("testing", "testing"))
    assert "Reservations" in admin.describe_instances()  # type: ignore[attr-defined]
    with pytest.raises(ClientError):
        client(moto, "ec2", ("testing", "wrong")).describe_subnets()  # type: ignore[attr-defined]
    moto.reset()
    assert controller.describe_subnets()["Subnets"]  # type: ignore[attr-defined]  # the same key after a reset
    with pytest.raises(ClientError):
        controller.describe_instances()  # type: ignore[attr-defined]


def test_a_cached_answer_is_served_only_to_a_key_moto_would_allow(tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("moto-cache")
    with MotoServer(worker_policy=POLICY, response_cache=cache) as server:
        assert server.controller_key is not None
        admin = client(server, "ec2", ("testing", "testing"))
        assert admin.describe_instance_types(InstanceTypes=["m5.large"])["InstanceTypes"]  # type: ignore[attr-defined]
        assert list(cache.iterdir())  # stored: the next identical request is a cache hit
        controller = client(server, "ec2", server.controller_key)
        with pytest.raises(ClientError, match="not authorized to perform: ec2:DescribeInstanceTypes"):
            controller.describe_instance_types(InstanceTypes=["m5.large"])  # type: ignore[attr-defined]
        assert admin.describe_instance_types(InstanceTypes=["m5.large"])["InstanceTypes"]  # type: ignore[attr-defined]
