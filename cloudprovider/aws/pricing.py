"""On-demand prices: a static table shipped with the package.

`data/on-demand-prices.json` holds public on-demand list prices (USD per instance-hour, Linux, shared
tenancy) for us-east-1. nodeflow uses it as the fallback price table for *every* region until a refresh
from the AWS Pricing API is wired in; prices differ by a few percent between regions, which only matters
for ordering near-equal offerings. Spot prices come from DescribeSpotPriceHistory, not from here.

A public input of the local stack (devstack prices its emulated EC2 from this table, see devstack/README.md):
keep `load_price_table()` and `PriceTable.on_demand` stable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class PriceTable:
    """On-demand price per instance type. `as_of` is the table's timestamp, `region` where it was read."""

    region: str
    as_of: str
    prices: Mapping[str, float]

    def on_demand(self, instance_type: str) -> float | None:
        """The hourly on-demand price, or None when the table does not know the type."""
        return self.prices.get(instance_type)

    def __contains__(self, instance_type: object) -> bool:
        return instance_type in self.prices

    @classmethod
    def from_json(cls, text: str) -> PriceTable:
        """Parse the shipped format: `{"region", "asOf", "prices": {type: price}}`. Raises ValueError."""
        doc = json.loads(text)
        prices = doc.get("prices")
        if not isinstance(prices, dict) or not prices:
            raise ValueError('price table: field "prices" must be a non-empty object of instance type -> price')
        for name, price in prices.items():
            if not isinstance(price, int | float) or price < 0:
                raise ValueError(f'price table: prices["{name}"] must be a non-negative number, got {price!r}')
        return cls(region=str(doc.get("region", "")), as_of=str(doc.get("asOf", "")), prices=dict(prices))


@cache
def load_price_table() -> PriceTable:
    """The shipped on-demand price table (loaded once per process)."""
    text = resources.files("cloudprovider.aws").joinpath("data/on-demand-prices.json").read_text()
    return PriceTable.from_json(text)
