"""The local stack's moto server: seed, fault endpoint, and the patches (fleet order, ICE, throttling, spot)."""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.ec2.models.instance_types import INSTANCE_TYPES

from cloudprovider.aws.instancetypes.catalog import catalog_file, generate
from cloudprovider.aws.pricing.api import parse_price_list, product_filters
from cloudprovider.aws.pricing.tables import load_price_table
from devstack.aws.faults import FaultClient
from devstack.aws.server import MotoServer

REGION = "us-west-2"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoServer]:
    with MotoServer(cluster_name="devstack-test") as server:
        yield server


@pytest.fixture
def faults(aws: MotoServer) -> Iterator[FaultClient]:
    client = aws.fault_client()
    client.clear()
    yield client
    client.clear()


@pytest.fixture(scope="module")
def ec2(aws: MotoServer) -> Any:
    config = Config(retries={"mode": "standard", "total_max_attempts": 1})
    return boto3.client(
        "ec2", endpoint_url=aws.url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t", config=config
    )


@pytest.fixture(scope="module")
def template(aws: MotoServer, ec2: Any) -> str:
    ec2.create_launch_template(LaunchTemplateName="tmpl", LaunchTemplateData={"ImageId": "ami-12c6146b"})
    return "tmpl"


def fleet(
    ec2: Any,
    overrides: list[dict[str, Any]],
    capacity_type: str = "on-demand",
    strategy: str = "lowest-price",
    token: str | None = None,
) -> dict[str, Any]:
    options = {"SpotOptions" if capacity_type == "spot" else "OnDemandOptions": {"AllocationStrategy": strategy}}
    return dict(
        ec2.create_fleet(
            Type="instant",
            **({"ClientToken": token} if token else {}),
            **options,
            LaunchTemplateConfigs=[
                {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": "tmpl", "Version": "$Latest"},
                    "Overrides": overrides,
                }
            ],
            TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": capacity_type},
        )
    )


def launched(response: dict[str, Any]) -> tuple[str, str] | None:
    for group in response.get("Instances", []):
        overrides = group["LaunchTemplateAndOverrides"]["Overrides"]
        return group["InstanceType"], overrides.get("AvailabilityZone", "")
    return None


def test_seed_is_idempotent(aws: MotoServer) -> None:
    from devstack.aws.seed import seed

    again = seed(aws.url, aws.cluster_name, aws.region)
    keys = ("vpc", "subnets", "securityGroup", "role", "clusterEndpoint")
    assert {k: again[k] for k in keys} == {k: aws.seeded[k] for k in keys}


def test_ami_aliases_point_at_described_images(aws: MotoServer, ec2: Any) -> None:
    ssm = boto3.client(
        "ssm", endpoint_url=aws.url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
    )
    for name in (
        "/aws/service/eks/optimized-ami/1.28/amazon-linux-2023/arm64/standard/recommended/image_id",
        "/aws/service/eks/optimized-ami/1.34/amazon-linux-2/recommended/image_id",
        "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id",
    ):
        image_id = ssm.get_parameter(Name=name)["Parameter"]["Value"]
        image = ec2.describe_images(ImageIds=[image_id])["Images"][0]
        assert image["Architecture"] == ("arm64" if "arm64" in name else "x86_64")
        assert image["Name"]


def test_every_instance_type_is_offered_in_three_zones(ec2: Any) -> None:
    for zone in ("us-west-2a", "us-west-2b", "us-west-2c"):
        offered = ec2.describe_instance_type_offerings(
            LocationType="availability-zone", Filters=[{"Name": "location", "Values": [zone]}]
        )["InstanceTypeOfferings"]
        assert len({o["InstanceType"] for o in offered}) == len(INSTANCE_TYPES)


def test_create_fleet_launches_the_cheapest_override(ec2: Any, template: str) -> None:
    overrides = [{"InstanceType": t, "AvailabilityZone": "us-west-2b"} for t in ("m5.xlarge", "m5.large", "c5.large")]
    assert launched(fleet(ec2, overrides)) == ("c5.large", "us-west-2b")
    prioritized = [{**o, "Priority": float(i)} for i, o in enumerate(overrides)]
    assert launched(fleet(ec2, prioritized, strategy="prioritized")) == ("m5.xlarge", "us-west-2b")


def test_spot_fleet_uses_spot_prices(ec2: Any, template: str) -> None:
    overrides = [
        {"InstanceType": "m5.large", "AvailabilityZone": z} for z in ("us-west-2a", "us-west-2b", "us-west-2c")
    ]
    history = ec2.describe_spot_price_history(InstanceTypes=["m5.large"])["SpotPriceHistory"]
    cheapest = min(
        (float(h["SpotPrice"]), h["AvailabilityZone"])
        for h in history
        if h["AvailabilityZone"] in ("us-west-2a", "us-west-2b", "us-west-2c")
    )
    assert launched(fleet(ec2, overrides, "spot", "price-capacity-optimized")) == ("m5.large", cheapest[1])


def test_spot_prices_are_deterministic_and_current(ec2: Any) -> None:
    first = ec2.describe_spot_price_history(InstanceTypes=["c5.large"])["SpotPriceHistory"]
    second = ec2.describe_spot_price_history(InstanceTypes=["c5.large"])["SpotPriceHistory"]
    assert [h["SpotPrice"] for h in first] == [h["SpotPrice"] for h in second]
    on_demand = load_price_table().on_demand("c5.large") or 0
    for h in first:
        assert 0.30 * on_demand <= float(h["SpotPrice"]) <= 0.40 * on_demand
        assert dt.datetime.now(dt.UTC) - h["Timestamp"] < dt.timedelta(minutes=5)


def test_spot_prices_differ_by_zone(ec2: Any) -> None:
    history = ec2.describe_spot_price_history(InstanceTypes=["m5.large"])["SpotPriceHistory"]
    by_zone = {h["AvailabilityZone"]: h["SpotPrice"] for h in history}
    assert set(by_zone) >= {f"{REGION}{z}" for z in "abc"}
    assert len(set(by_zone.values())) == len(by_zone)


def pricing_client(aws: MotoServer) -> Any:
    config = Config(retries={"mode": "standard", "total_max_attempts": 1})
    return boto3.client(
        "pricing", endpoint_url=aws.url, region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t",
        config=config,
    )  # fmt: skip


def test_pricing_get_products_answers_in_the_real_shape_from_the_shipped_table(aws: MotoServer) -> None:
    pricing = pricing_client(aws)
    filters = product_filters(REGION, "Compute Instance", "Shared")
    first = pricing.get_products(ServiceCode="AmazonEC2", Filters=filters, MaxResults=50)
    assert first["FormatVersion"] == "aws_v1" and len(first["PriceList"]) == 50 and first["NextToken"]
    document = json.loads(first["PriceList"][0])
    assert document["product"]["attributes"]["regionCode"] == REGION
    assert document["product"]["productFamily"] == "Compute Instance"
    prices = parse_price_list(first["PriceList"])
    table = load_price_table()
    assert prices and all(price == pytest.approx(table.on_demand(name)) for name, price in prices.items())
    second = pricing.get_products(ServiceCode="AmazonEC2", Filters=filters, MaxResults=50, NextToken=first["NextToken"])
    assert not set(parse_price_list(second["PriceList"])) & set(prices)
    metal = product_filters(REGION, "Compute Instance (bare metal)", "Dedicated")
    names = parse_price_list(pricing.get_products(ServiceCode="AmazonEC2", Filters=metal)["PriceList"])
    assert names and all(".metal" in name for name in names)
    nowhere = product_filters("xx-nowhere-1", "Compute Instance", "Shared")
    assert pricing.get_products(ServiceCode="AmazonEC2", Filters=nowhere)["PriceList"] == []


def test_access_denied_for_the_next_calls(aws: MotoServer, faults: FaultClient) -> None:
    pricing = pricing_client(aws)
    faults.access_denied("GetProducts", 1)
    with pytest.raises(ClientError) as raised:
        pricing.get_products(ServiceCode="AmazonEC2")
    assert raised.value.response["Error"]["Code"] == "AccessDeniedException"
    assert pricing.get_products(ServiceCode="AmazonEC2", Filters=[])["FormatVersion"] == "aws_v1"


def test_insufficient_capacity_returns_real_errors(ec2: Any, template: str, faults: FaultClient) -> None:
    faults.insufficient_capacity("c5.large", "us-west-2b", "on-demand")
    overrides = [{"InstanceType": t, "AvailabilityZone": "us-west-2b"} for t in ("c5.large", "m5.large")]
    response = fleet(ec2, overrides)
    assert launched(response) == ("m5.large", "us-west-2b")
    assert [e["ErrorCode"] for e in response["Errors"]] == ["InsufficientInstanceCapacity"]
    assert response["Errors"][0]["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"] == "c5.large"
    assert launched(fleet(ec2, overrides[:1], "spot")) == ("c5.large", "us-west-2b")  # only on-demand refused
    faults.insufficient_capacity("m5.large", "us-west-2b")
    response = fleet(ec2, overrides)
    assert response["Instances"] == [] and len(response["Errors"]) == 2


def test_client_token_repeats_the_first_result(ec2: Any, template: str) -> None:
    overrides = [{"InstanceType": "m5.large", "AvailabilityZone": "us-west-2a"}]
    first = fleet(ec2, overrides, token="token-1")
    assert fleet(ec2, overrides, token="token-1")["Instances"] == first["Instances"]
    assert fleet(ec2, overrides, token="token-2")["Instances"] != first["Instances"]


def test_throttling_and_server_errors_for_the_next_calls(ec2: Any, faults: FaultClient) -> None:
    faults.throttle("DescribeVpcs", 2)
    faults.server_error("DescribeSubnets", 1)
    for _ in range(2):
        with pytest.raises(ClientError) as raised:
            ec2.describe_vpcs()
        assert raised.value.response["Error"]["Code"] == "RequestLimitExceeded"
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    ec2.describe_vpcs()
    with pytest.raises(ClientError) as raised:
        ec2.describe_subnets()
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert faults.get() == {"insufficientCapacity": [], "throttle": {}, "serverError": {}, "accessDenied": {}}


def test_fault_endpoint_rejects_bad_input_naming_the_field(aws: MotoServer) -> None:
    request = urllib.request.Request(
        aws.url + "/_nodeflow/faults", data=json.dumps({"throttle": {"X": -1}}).encode(), method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=5)
    assert raised.value.code == 400
    assert "throttle" in json.loads(raised.value.read())["error"]


def test_standalone_entry_point_serves_until_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "devstack.aws", "--port", "0", "--cluster-name", "standalone"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        info = json.loads(process.stdout.readline())
        assert FaultClient(info["url"]).get()["throttle"] == {}
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
        if process.stdout is not None:
            process.stdout.close()


def test_shipped_catalog_matches_what_the_local_stack_generates(aws: MotoServer) -> None:
    shipped = resources.files("cloudprovider.aws").joinpath(catalog_file(REGION)).read_bytes()
    generated = generate(aws.url, REGION, aws.cluster_name, [f"{REGION}{z}" for z in "abc"])
    assert generated == shipped, (
        "stale catalog: run python -m cloudprovider.aws.instancetypes.catalog generate (see its docstring)"
    )


def test_reset_wipes_state_and_seeds_again(aws: MotoServer, ec2: Any, faults: FaultClient) -> None:
    faults.throttle("CreateFleet", 5)
    aws.reset()
    assert faults.get()["throttle"] == {}
    assert ec2.describe_instances()["Reservations"] == []
    subnets = ec2.describe_subnets(SubnetIds=aws.seeded["subnets"])["Subnets"]
    assert len(subnets) == 3
