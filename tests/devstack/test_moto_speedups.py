"""The local stack's DescribeInstances filter speed-up answers as moto does."""

from __future__ import annotations

import copy
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.backends import get_backend
from moto.core import DEFAULT_ACCOUNT_ID

from devstack.aws import speedups

REGION = "us-west-2"


def _ids(reservations: list[Any]) -> list[str]:
    return sorted(i.id for r in reservations for i in r.instances)


@mock_aws
def test_filtered_instances_are_the_ones_moto_finds() -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    for n in range(6):
        tags = [
            {"Key": "kubernetes.io/cluster/dev", "Value": "owned"},
            {"Key": "karpenter.sh/nodeclaim", "Value": f"c{n}"},
        ]
        ec2.run_instances(
            ImageId=image, MinCount=2, MaxCount=2, TagSpecifications=[{"ResourceType": "instance", "Tags": tags}]
        )
    backend = get_backend("ec2")[DEFAULT_ACCOUNT_ID][REGION]
    first = sorted(backend.reservations)[0]
    ids = _ids([backend.reservations[first]])
    ec2.terminate_instances(InstanceIds=ids[:1])
    cluster = {"tag-key": ["kubernetes.io/cluster/dev"], "instance-state-name": ["running"]}
    cases = [
        cluster,
        {**cluster, "tag:karpenter.sh/nodeclaim": ["c3"]},
        {**cluster, "tag:karpenter.sh/nodeclaim": ["c*"]},
        {**cluster, "instance-id": ids},
        {"instance-id": ids, "tag:karpenter.sh/nodeclaim": ["c4", "c5"]},
        {"tag:karpenter.sh/nodeclaim": ["c?"], "instance-state-name": ["terminated"]},
    ]
    for filters in cases:
        reservations = list(backend.reservations.values())
        ours = speedups._filter_reservations([copy.copy(r) for r in reservations], filters)
        theirs = speedups._original_filter_reservations([copy.copy(r) for r in reservations], filters)
        assert _ids(ours) == _ids(theirs), filters
    assert speedups._filter_to_re("c*") == speedups._original_filter_to_re("c*")


def test_an_unsupported_filter_still_fails_as_in_moto() -> None:
    with pytest.raises(NotImplementedError):
        speedups._filter_reservations([_Reservation()], {"instance-id": ["i-1"], "no-such-filter": ["x"]})


class _Reservation:
    instances = [type("Instance", (), {"id": "i-1"})()]
