"""The AWS Pricing API's GetProducts for the local stack (moto has no Pricing API).

`PricingApp` wraps the moto WSGI app and answers JSON-protocol requests whose target is
`AWSPriceListService.GetProducts`; everything else goes to moto. The answer has the real one's shape:
`{"FormatVersion": "aws_v1", "PriceList": [<one JSON text per product>], "NextToken"?}`, each product
with `product.attributes` and `terms.OnDemand.<term>.priceDimensions.<rate>.pricePerUnit.USD`.

The products are EC2 on-demand Linux instances of every instance type of the shipped price table of the
region asked for (`cloudprovider.aws.pricing.tables`; us-east-1's for a region without one, so the prices the
product reads equal those the patched CreateFleet ranks by). Bare-metal types (`*.metal*`) are product
family `Compute Instance (bare metal)` with tenancy `Dedicated`, the others `Compute Instance` with
tenancy `Shared`. TERM_MATCH filters select on the attributes; a filter on an attribute the products do
not have, a region code that is not an AWS region, or a service code other than AmazonEC2 selects
nothing, as the real API does. `MaxResults` (default 100) pages with `NextToken`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import botocore.session

from cloudprovider.aws.pricing.tables import load_price_table, shipped_regions
from devstack.aws.request import WSGIApp, request_body

TARGET = "AWSPriceListService.GetProducts"
TERM = "JRTCKXETXF"  # the on-demand offer term code
RATE = "6YS6EN2CT7"  # the hourly rate code


@cache
def aws_regions() -> frozenset[str]:
    """Every region of the standard AWS partition botocore knows EC2 in."""
    return frozenset(botocore.session.get_session().get_available_regions("ec2"))


def _attributes(instance_type: str, region: str) -> tuple[str, dict[str, str]]:
    metal = ".metal" in instance_type
    attributes = {
        "instanceType": instance_type,
        "regionCode": region,
        "servicecode": "AmazonEC2",
        "operatingSystem": "Linux",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
        "tenancy": "Dedicated" if metal else "Shared",
        "licenseModel": "No License required",
    }
    return ("Compute Instance (bare metal)" if metal else "Compute Instance"), attributes


def product_document(instance_type: str, region: str, price: float) -> str:
    """One `PriceList` entry, as the Pricing API writes it (trimmed to the attributes above)."""
    family, attributes = _attributes(instance_type, region)
    sku = uuid.uuid5(uuid.NAMESPACE_URL, f"{region}/{instance_type}").hex[:16].upper()
    term, rate = f"{sku}.{TERM}", f"{sku}.{TERM}.{RATE}"
    dimension = {
        "unit": "Hrs",
        "endRange": "Inf",
        "description": f"${price:.4f} per On Demand Linux {instance_type} Instance Hour",
        "appliesTo": [],
        "rateCode": rate,
        "beginRange": "0",
        "pricePerUnit": {"USD": f"{price:.10f}"},
    }
    return json.dumps(
        {
            "product": {"productFamily": family, "attributes": attributes, "sku": sku},
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    term: {
                        "priceDimensions": {rate: dimension},
                        "sku": sku,
                        "effectiveDate": "2026-01-01T00:00:00Z",
                        "offerTermCode": TERM,
                        "termAttributes": {},
                    }
                }
            },
            "version": "20260101000000",
            "publicationDate": "2026-01-01T00:00:00Z",
        }
    )


def _matches(family: str, attributes: dict[str, str], filters: Iterable[dict[str, Any]]) -> bool:
    fields = {**attributes, "productFamily": family, "serviceCode": attributes["servicecode"]}
    return all(fields.get(str(f.get("Field"))) == f.get("Value") for f in filters)


@cache
def _products(region: str) -> list[tuple[str, dict[str, str], str]]:
    """(family, attributes, document) of every priced instance type of `region`, built once per process:
    every worker start asks for all of them."""
    table = load_price_table(region if region in shipped_regions() else "us-east-1")
    return [
        (*_attributes(name, region), product_document(name, region, price))
        for name, price in sorted(table.prices.items())
        if price > 0
    ]


def get_products(request: dict[str, Any]) -> dict[str, Any]:
    """The GetProducts answer for a request body (see the module docstring)."""
    filters = request.get("Filters") or []
    region = next((str(f.get("Value")) for f in filters if f.get("Field") == "regionCode"), "")
    if request.get("ServiceCode") != "AmazonEC2" or region not in aws_regions():
        return {"FormatVersion": "aws_v1", "PriceList": []}
    matching = [document for family, attributes, document in _products(region) if _matches(family, attributes, filters)]
    start = int(request.get("NextToken") or 0)
    size = int(request.get("MaxResults") or 100)
    answer: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": matching[start : start + size]}
    if start + size < len(matching):
        answer["NextToken"] = str(start + size)
    return answer


class PricingApp:
    """Answers GetProducts (see the module docstring); passes every other request to `app`."""

    def __init__(self, app: WSGIApp) -> None:
        self._app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("HTTP_X_AMZ_TARGET") != TARGET:
            return self._app(environ, start_response)
        try:
            request = json.loads(request_body(environ) or b"{}")
            status, body = "200 OK", get_products(request)
        except (ValueError, TypeError, AttributeError) as error:
            status, body = "400 Bad Request", {"__type": "InvalidParameterException", "message": str(error)}
        start_response(status, [("Content-Type", "application/x-amz-json-1.1")])
        return [json.dumps(body).encode()]
