"""On-demand prices from the AWS Pricing API (`pricing:GetProducts`), asked as Karpenter asks.

Karpenter reads EC2's on-demand prices of a region with two GetProducts queries on service code
`AmazonEC2`, both filtered (TERM_MATCH) on the region code, Linux, no pre-installed software, capacity
status `Used` and market option `OnDemand`: one for product family `Compute Instance` with tenancy
`Shared`, one for `Compute Instance (bare metal)` with tenancy `Dedicated` (bare metal is single-tenant).
The Pricing API has few endpoints; Karpenter picks ap-south-1 for ap-* regions, eu-central-1 for eu-*,
cn-northwest-1 for the China regions (prices in CNY) and us-east-1 for every other one
(`pricing_endpoint_region`).

Each answer's `PriceList` holds one JSON document per product: the instance type is
`product.attributes.instanceType`, the hourly price
`terms.OnDemand.<term>.priceDimensions.<rate>.pricePerUnit.<currency>`.
`parse_price_list` reads them (pure); `fetch_on_demand_prices` pages through both queries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cloudprovider.aws.errors import call
from cloudprovider.aws.sdk import PricingAPI
from cloudprovider.errors import CloudProviderError

SERVICE_CODE = "AmazonEC2"
COMPUTE_INSTANCE = ("Compute Instance", "Shared")
BARE_METAL = ("Compute Instance (bare metal)", "Dedicated")
PAGE_SIZE = 100  # GetProducts' maximum


def pricing_endpoint_region(region: str) -> str:
    """The region of the Pricing API endpoint that answers for `region` (as Karpenter picks it)."""
    if region.startswith("ap-"):
        return "ap-south-1"
    if region.startswith("eu-"):
        return "eu-central-1"
    if region.startswith("cn-"):
        return "cn-northwest-1"
    return "us-east-1"


def currency(region: str) -> str:
    """The currency the Pricing API quotes `region`'s prices in."""
    return "CNY" if region.startswith("cn-") else "USD"


def product_filters(region: str, product_family: str, tenancy: str) -> list[dict[str, str]]:
    """GetProducts `Filters` for EC2 on-demand Linux instances of `region` in one family and tenancy."""
    terms = {
        "regionCode": region,
        "serviceCode": SERVICE_CODE,
        "preInstalledSw": "NA",
        "operatingSystem": "Linux",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
        "tenancy": tenancy,
        "productFamily": product_family,
    }
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in terms.items()]


def parse_price_list(items: Iterable[str | Mapping[str, Any]], currency: str = "USD") -> dict[str, float]:
    """Instance type -> hourly on-demand price from GetProducts `PriceList` entries (JSON text, or already
    parsed). An entry without an instance type or a positive price in `currency` is left out, as is one
    that is not JSON; the first price of a type wins."""
    prices: dict[str, float] = {}
    for item in items:
        try:
            doc = json.loads(item) if isinstance(item, str) else item
        except ValueError:
            continue
        name = _get(doc, "product", "attributes", "instanceType")
        if not isinstance(name, str) or not name or name in prices:
            continue
        price = _on_demand_price(_get(doc, "terms", "OnDemand"), currency)
        if price is not None:
            prices[name] = price
    return prices


def _get(doc: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)
    return doc


def _on_demand_price(terms: Any, currency: str) -> float | None:
    """The first positive hourly price among the terms' price dimensions."""
    if not isinstance(terms, Mapping):
        return None
    for term in terms.values():
        dimensions = _get(term, "priceDimensions")
        for dimension in dimensions.values() if isinstance(dimensions, Mapping) else ():
            try:
                price = float(_get(dimension, "pricePerUnit", currency))
            except (TypeError, ValueError):
                continue
            if price > 0:
                return price
    return None


def fetch_on_demand_prices(pricing: PricingAPI, region: str) -> dict[str, float]:
    """Every on-demand price of `region` from the Pricing API (`pricing` is a client of the endpoint
    `pricing_endpoint_region(region)` names). Raises CloudProviderError when a call fails (access
    denied, throttled, no route) or when no price comes back (the region code is not one AWS prices)."""
    prices: dict[str, float] = {}
    for family, tenancy in (COMPUTE_INSTANCE, BARE_METAL):
        filters = product_filters(region, family, tenancy)
        token: str | None = None
        while True:
            page = call(
                "GetProducts",
                pricing.get_products,
                ServiceCode=SERVICE_CODE,
                Filters=filters,
                FormatVersion="aws_v1",
                MaxResults=PAGE_SIZE,
                **({"NextToken": token} if token else {}),
            )
            for name, price in parse_price_list(page.get("PriceList", []), currency(region)).items():
                prices.setdefault(name, price)
            token = page.get("NextToken")
            if not token:
                break
    if not prices:
        raise CloudProviderError(f"the AWS Pricing API returned no on-demand EC2 prices for region {region}")
    return prices
