"""On-demand price tables shipped with the package, one per region.

`data/on-demand-prices-<region>.json` holds public on-demand list prices (per instance-hour, Linux,
shared tenancy) of one region, written by `nodeflow prices refresh --region R` from the AWS Pricing API
(see workers.cli.prices). They are the fallback when the Pricing API does not answer (no
`pricing:GetProducts` permission, no route to its endpoint, throttled): as Karpenter's generated static
table, a region without a table of its own uses us-east-1's (`shipped_price_table`); prices differ by a
few percent between regions, which only matters for ordering near-equal offerings. Drop a new region's
file into the directory to ship it. Live prices (the Pricing API, spot prices) are
`cloudprovider.aws.pricing.pricebook`'s.

A public input of the local stack (devstack prices its emulated EC2 and answers the Pricing API from
these tables, see devstack/README.md): keep `load_price_table()`, `shipped_regions()` and
`PriceTable.on_demand` stable.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

log = logging.getLogger(__name__)

DEFAULT_TABLE_REGION = "us-east-1"
TABLE_PREFIX, TABLE_SUFFIX = "on-demand-prices-", ".json"
UNIT = "per instance-hour, Linux, on-demand, shared tenancy"


@dataclass(frozen=True)
class PriceTable:
    """On-demand price per instance type. `as_of` is the table's timestamp, `region` where it was read,
    `currency` the prices' (USD; CNY in the China regions)."""

    region: str
    as_of: str
    prices: Mapping[str, float]
    currency: str = "USD"

    def on_demand(self, instance_type: str) -> float | None:
        """The hourly on-demand price, or None when the table does not know the type."""
        return self.prices.get(instance_type)

    def __contains__(self, instance_type: object) -> bool:
        return instance_type in self.prices

    @classmethod
    def from_json(cls, text: str) -> PriceTable:
        """Parse the shipped format: `{"region", "currency", "asOf", "prices": {type: price}}`. Raises ValueError."""
        doc = json.loads(text)
        prices = doc.get("prices")
        if not isinstance(prices, dict) or not prices:
            raise ValueError('price table: field "prices" must be a non-empty object of instance type -> price')
        for name, price in prices.items():
            if not isinstance(price, int | float) or price < 0:
                raise ValueError(f'price table: prices["{name}"] must be a non-negative number, got {price!r}')
        return cls(
            region=str(doc.get("region", "")),
            as_of=str(doc.get("asOf", "")),
            prices=dict(prices),
            currency=str(doc.get("currency", "USD")),
        )

    def to_json(self) -> str:
        """The shipped format, one price per line in name order (small diffs when refreshed)."""
        head = {"region": self.region, "currency": self.currency, "unit": UNIT, "asOf": self.as_of}
        lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
        rows = [f"{json.dumps(name)}: {json.dumps(self.prices[name])}" for name in sorted(self.prices)]
        return "{\n" + ",\n".join(lines) + ',\n"prices": {\n' + ",\n".join(rows) + "\n}\n}\n"


def table_file(region: str) -> str:
    """The shipped table's path inside the package."""
    return f"data/{TABLE_PREFIX}{region}{TABLE_SUFFIX}"


def shipped_regions() -> list[str]:
    """The regions with a shipped table, sorted."""
    data = resources.files("cloudprovider.aws").joinpath("data")
    names = [p.name for p in data.iterdir() if p.name.startswith(TABLE_PREFIX) and p.name.endswith(TABLE_SUFFIX)]
    return sorted(n[len(TABLE_PREFIX) : -len(TABLE_SUFFIX)] for n in names)


def load_price_table(region: str = DEFAULT_TABLE_REGION) -> PriceTable:
    """The shipped table of `region` (loaded once per process). Raises ValueError naming the regions
    shipped when there is none."""
    return _load(region)


@cache
def _load(region: str) -> PriceTable:
    path = resources.files("cloudprovider.aws").joinpath(table_file(region))
    if not path.is_file():
        raise ValueError(f'no shipped on-demand price table for region "{region}"; shipped: {shipped_regions()}')
    return PriceTable.from_json(path.read_text())


@cache
def shipped_price_table(region: str) -> PriceTable:
    """`region`'s shipped table, else us-east-1's (as Karpenter does), logged once per region."""
    if region in shipped_regions():
        return load_price_table(region)
    log.warning(
        "no shipped on-demand price table for region %s: using %s's until the AWS Pricing API answers "
        "(write one with `nodeflow prices refresh --region %s`)",
        region,
        DEFAULT_TABLE_REGION,
        region,
    )
    return load_price_table(DEFAULT_TABLE_REGION)
