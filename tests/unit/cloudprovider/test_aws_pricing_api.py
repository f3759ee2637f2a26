"""The Pricing API's answer parsed (pure), Karpenter's query and endpoint choice, and the shipped tables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cloudprovider.aws.pricing.api import currency, parse_price_list, pricing_endpoint_region, product_filters
from cloudprovider.aws.pricing.tables import PriceTable, load_price_table, shipped_price_table, shipped_regions


def product(instance_type: str, price: str, unit: str = "USD", family: str = "Compute Instance") -> str:
    """One GetProducts `PriceList` entry in the shape the Pricing API returns (trimmed attributes)."""
    sku = "SKU" + instance_type.replace(".", "").upper()
    term = f"{sku}.JRTCKXETXF"
    return json.dumps(
        {
            "product": {
                "productFamily": family,
                "attributes": {
                    "instanceType": instance_type,
                    "regionCode": "us-east-1",
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "marketoption": "OnDemand",
                    "servicecode": "AmazonEC2",
                    "vcpu": "2",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    term: {
                        "priceDimensions": {
                            f"{term}.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "description": f"${price} per On Demand Linux {instance_type} Instance Hour",
                                "appliesTo": [],
                                "rateCode": f"{term}.6YS6EN2CT7",
                                "beginRange": "0",
                                "pricePerUnit": {unit: price},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2026-07-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20260701000000",
            "publicationDate": "2026-07-01T00:00:00Z",
        }
    )


def test_parses_the_hourly_price_of_each_instance_type() -> None:
    items = [
        product("m5.large", "0.0960000000"),
        product("c5.metal", "4.0800000000", family="Compute Instance (bare metal)"),
    ]
    assert parse_price_list(items) == {"m5.large": pytest.approx(0.096), "c5.metal": pytest.approx(4.08)}


def test_leaves_out_zero_prices_other_currencies_and_malformed_entries() -> None:
    broken: list[Any] = [
        product("m5.large", "0.0000000000"),  # a placeholder product
        product("m5.xlarge", "1.23", unit="CNY"),
        "not json",
        json.dumps({"product": {"attributes": {}}}),
        json.dumps({"product": {"attributes": {"instanceType": "t3.micro"}}, "terms": {"OnDemand": "?"}}),
        product("t3.nano", "cheap"),
    ]
    assert parse_price_list(broken) == {}
    assert parse_price_list([product("m5.xlarge", "1.23", unit="CNY")], "CNY") == {"m5.xlarge": pytest.approx(1.23)}


def test_the_first_price_of_a_type_wins_and_parsed_entries_are_accepted() -> None:
    items = [json.loads(product("m5.large", "0.096")), product("m5.large", "0.5")]
    assert parse_price_list(items) == {"m5.large": pytest.approx(0.096)}


@pytest.mark.parametrize(
    ("region", "endpoint"),
    [
        ("us-east-1", "us-east-1"),
        ("us-west-2", "us-east-1"),
        ("ca-central-1", "us-east-1"),
        ("eu-west-1", "eu-central-1"),
        ("ap-northeast-1", "ap-south-1"),
        ("cn-north-1", "cn-northwest-1"),
    ],
)
def test_the_pricing_endpoint_is_chosen_by_region_prefix(region: str, endpoint: str) -> None:
    assert pricing_endpoint_region(region) == endpoint


def test_china_is_priced_in_yuan() -> None:
    assert (currency("cn-north-1"), currency("us-west-2")) == ("CNY", "USD")


def test_filters_ask_for_linux_on_demand_of_one_region_family_and_tenancy() -> None:
    filters = {f["Field"]: f["Value"] for f in product_filters("eu-west-1", "Compute Instance", "Shared")}
    assert filters == {
        "regionCode": "eu-west-1",
        "serviceCode": "AmazonEC2",
        "preInstalledSw": "NA",
        "operatingSystem": "Linux",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
        "tenancy": "Shared",
        "productFamily": "Compute Instance",
    }
    assert {f["Type"] for f in product_filters("eu-west-1", "x", "y")} == {"TERM_MATCH"}


def test_us_east_1_ships_and_other_regions_fall_back_to_it() -> None:
    assert "us-east-1" in shipped_regions()
    assert shipped_price_table("us-east-1") is load_price_table("us-east-1")
    assert shipped_price_table("eu-west-3") is load_price_table("us-east-1")
    with pytest.raises(ValueError, match=r'region "eu-west-3".*us-east-1'):
        load_price_table("eu-west-3")


def test_a_table_written_reads_back_the_same() -> None:
    table = load_price_table()
    again = PriceTable.from_json(table.to_json())
    assert again == table
    small = PriceTable("eu-west-1", "2026-11-24T00:00:00Z", {"m5.large": 0.107, "c5.large": 0.096})
    assert small.to_json().splitlines()[:6] == [
        "{",
        '"region": "eu-west-1",',
        '"currency": "USD",',
        '"unit": "per instance-hour, Linux, on-demand, shared tenancy",',
        '"asOf": "2026-11-24T00:00:00Z",',
        '"prices": {',
    ]
