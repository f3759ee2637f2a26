"""Prices over HTTP with real boto3 against the local stack's AWS layer: the Pricing API answering and
failing, spot prices per zone, the catalog (what the scheduler and consolidation read) following the
price book, the refresh intervals on a fake clock, and `nodeflow prices refresh`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from activities.provisioning.price_refresh import PriceRefresher
from cloudprovider.aws.factory import new_aws_cloud_provider
from cloudprovider.aws.pricing.pricebook import PriceBook
from cloudprovider.aws.pricing.tables import PriceTable, load_price_table
from cloudprovider.aws.provider import AWSCloudProvider
from devstack.aws.faults import FaultClient
from devstack.aws.response_cache import default_cache_dir
from devstack.aws.server import MotoServer
from workers.cli import main

CLUSTER = "prices-cluster"
REGION = "us-west-2"
HOUR = 3600.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoServer]:
    with MotoServer(cluster_name=CLUSTER, region=REGION, response_cache=default_cache_dir()) as server:
        yield server


@pytest.fixture
def faults(aws: MotoServer) -> Iterator[FaultClient]:
    client = aws.fault_client()
    client.clear()
    yield client
    client.clear()


def provider(aws: MotoServer, clock: FakeClock | None = None) -> AWSCloudProvider:
    return new_aws_cloud_provider(
        REGION,
        aws.url,
        cluster_name=CLUSTER,
        credentials=("testing", "testing"),
        max_attempts=1,
        **({"clock": clock} if clock else {}),
    )


def pricing_client(url: str, region: str = "us-east-1"):  # type: ignore[no-untyped-def]
    return boto3.client(
        "pricing", endpoint_url=url, region_name=region, aws_access_key_id="t", aws_secret_access_key="t"
    )


def test_on_demand_prices_come_from_the_pricing_api_when_it_answers(aws: MotoServer, faults: FaultClient) -> None:
    cloud = provider(aws)
    assert cloud.prices.on_demand_source.startswith("the shipped table of us-east-1")
    assert cloud.prices.refresh_on_demand()
    assert cloud.prices.on_demand_source.startswith("the AWS Pricing API")
    table = cloud.prices.on_demand()
    assert table.region == REGION
    assert table.on_demand("m5.large") == pytest.approx(0.096)
    assert table.on_demand("c5.metal") == pytest.approx(load_price_table().on_demand("c5.metal") or 0)


@pytest.mark.parametrize("fault", ["access_denied", "throttle", "server_error"])
def test_a_failing_pricing_api_keeps_the_shipped_table(aws: MotoServer, faults: FaultClient, fault: str) -> None:
    cloud = provider(aws)
    getattr(faults, fault)("GetProducts", 1)
    assert not cloud.prices.refresh_on_demand()
    assert cloud.prices.on_demand() is load_price_table()
    assert cloud.prices.on_demand_source.startswith("the shipped table of us-east-1")


def test_an_unreachable_pricing_endpoint_keeps_the_table(aws: MotoServer) -> None:
    ec2 = boto3.client(
        "ec2", endpoint_url=aws.url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
    )
    book = PriceBook(REGION, ec2, pricing_client("http://127.0.0.1:9"), FakeClock())
    assert not book.refresh_on_demand()
    assert book.on_demand() is load_price_table()


def test_a_region_without_a_shipped_table_starts_from_us_east_1s_and_takes_the_api_answer(aws: MotoServer) -> None:
    ec2 = boto3.client(
        "ec2", endpoint_url=aws.url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
    )
    book = PriceBook("eu-west-3", ec2, pricing_client(aws.url, "eu-central-1"), FakeClock())
    assert book.on_demand() is load_price_table("us-east-1")
    assert book.refresh_on_demand()
    assert book.on_demand().region == "eu-west-3" and "m5.large" in book.on_demand()


def test_the_catalog_prices_spot_per_zone_and_follows_the_price_book(aws: MotoServer) -> None:
    """What the scheduler and consolidation read (instance_types) changes when the prices do."""
    stale = PriceTable("us-west-2", "2020-01-01T00:00:00Z", {"m5.large": 9.99})
    clients = {
        name: boto3.client(
            name, endpoint_url=aws.url, region_name="us-east-1" if name == "pricing" else REGION,
            aws_access_key_id="t", aws_secret_access_key="t",
        )
        for name in ("ec2", "ssm", "iam", "pricing")
    }  # fmt: skip
    cloud = AWSCloudProvider(
        clients["ec2"], clients["ssm"], clients["iam"], region=REGION, cluster_name=CLUSTER, prices=stale,
        pricing=clients["pricing"],
    )  # fmt: skip

    def m5_prices(capacity_type: str) -> dict[str, float]:
        m5 = next(t for t in cloud.instance_types(None) if t.name == "m5.large")
        return {o.zone: o.price for o in m5.offerings if o.capacity_type == capacity_type}

    spot = m5_prices("spot")
    assert set(spot) >= {f"{REGION}{z}" for z in "abc"}
    assert len(set(spot.values())) == len(spot)  # the local stack quotes each zone its own price
    assert all(0.3 * 0.096 <= price <= 0.4 * 0.096 for price in spot.values())
    assert spot == {zone: cloud.prices.spot()[("m5.large", zone)] for zone in spot}
    assert set(m5_prices("on-demand").values()) == {9.99}
    version = cloud.prices.version
    assert cloud.prices.refresh_on_demand()
    assert cloud.prices.version > version
    assert list(set(m5_prices("on-demand").values())) == [pytest.approx(0.096)]


def test_refreshes_follow_their_intervals_on_the_clock(aws: MotoServer, faults: FaultClient) -> None:
    clock = FakeClock()
    cloud = provider(aws, clock)
    refresher = PriceRefresher(cloud.prices, 12 * HOUR, 2 * HOUR, clock, retry_seconds=600)
    cloud.prices.spot()  # as the catalog's first use does
    clock.now += 60
    assert refresher.tick() == pytest.approx(2 * HOUR - 60)  # spot just read: due at its interval
    assert cloud.prices.on_demand_source.startswith("the AWS Pricing API")
    assert cloud.prices.spot_age() == pytest.approx(60)
    clock.now += 2 * HOUR - 60
    faults.access_denied("GetProducts", 1)
    assert refresher.tick() == pytest.approx(2 * HOUR)  # spot read again now; on-demand not yet due
    assert cloud.prices.spot_age() == 0
    clock.now += 10 * HOUR + 60  # 12h after the first on-demand read; spot due as well
    assert refresher.tick() == pytest.approx(600)  # on-demand denied: tried again in 10 minutes
    assert faults.get()["accessDenied"] == {}
    answered_at = cloud.prices.on_demand_source
    clock.now += 600
    assert refresher.tick() == pytest.approx(2 * HOUR - 600)  # on-demand answered; spot next
    assert cloud.prices.on_demand_source.startswith("the AWS Pricing API")
    assert answered_at.startswith("the AWS Pricing API")  # the denied refresh kept the last answer


def test_prices_refresh_writes_the_shipped_table_format(
    aws: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    out = tmp_path / "prices.json"
    assert main(["prices", "refresh", "--region", "us-east-1", "--out", str(out), "--endpoint-url", aws.url]) == 0
    written = PriceTable.from_json(out.read_text())
    assert (written.region, written.currency) == ("us-east-1", "USD")
    assert written.prices == pytest.approx(dict(load_price_table().prices))
    assert json.loads(out.read_text())["unit"].startswith("per instance-hour")
