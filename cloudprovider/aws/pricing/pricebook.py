"""The region's current prices: on-demand per instance type, spot per (instance type, zone).

On-demand prices start as the shipped table of the region (`cloudprovider.aws.pricing.tables`, us-east-1's
when the region has none) and are replaced by the AWS Pricing API's when `refresh_on_demand` gets an
answer (`cloudprovider.aws.pricing.api`); a failed refresh keeps what there was. Spot prices are
DescribeSpotPriceHistory's latest price per instance type and zone, read on the first use and again
by `refresh_spot`. The worker calls both refreshes on intervals (activities.provisioning.price_refresh), as Karpenter's
pricing controller does; a refresh reads AWS without holding the lock readers take, so provisioning
never waits for it. `version` changes with every refresh that changed something, so the instance-type
catalog (cloudprovider.aws.instancetypes.offerings) knows to rebuild its offerings: the scheduler and consolidation
read prices only through it.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from typing import Any

from cloudprovider.aws.errors import call
from cloudprovider.aws.pricing.api import currency, fetch_on_demand_prices
from cloudprovider.aws.pricing.tables import PriceTable, shipped_price_table
from cloudprovider.aws.sdk import EC2API, PricingAPI
from cloudprovider.errors import CloudProviderError

log = logging.getLogger(__name__)

SPOT_PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]
SpotPrices = dict[tuple[str, str], float]


def fetch_spot_prices(ec2: EC2API, now: dt.datetime | None = None) -> SpotPrices:
    """The latest Linux spot price of every (instance type, zone) of the region. Raises CloudProviderError."""
    latest: dict[tuple[str, str], tuple[str, float]] = {}
    token: str | None = None
    while True:
        page: dict[str, Any] = call(
            "DescribeSpotPriceHistory",
            ec2.describe_spot_price_history,
            ProductDescriptions=SPOT_PRODUCTS,
            StartTime=now or dt.datetime.now(dt.UTC),
            **({"NextToken": token} if token else {}),
        )
        for entry in page.get("SpotPriceHistory", []):
            key = (entry["InstanceType"], entry["AvailabilityZone"])
            stamp = str(entry.get("Timestamp", ""))
            if key not in latest or stamp >= latest[key][0]:
                latest[key] = (stamp, float(entry["SpotPrice"]))
        token = page.get("NextToken")
        if not token:
            return {key: price for key, (_, price) in latest.items()}


class PriceBook:
    """See the module docstring. `pricing` None: never ask the Pricing API (the table stays). `clock`
    (seconds, monotonic) dates the refreshes; `table` replaces the shipped table to start from."""

    def __init__(
        self,
        region: str,
        ec2: EC2API,
        pricing: PricingAPI | None,
        clock: Callable[[], float],
        table: PriceTable | None = None,
    ) -> None:
        self.region = region
        self._ec2 = ec2
        self._pricing = pricing
        self._clock = clock
        self._table = table if table is not None else shipped_price_table(region)
        self._lock = threading.Lock()  # the fields below; never held across an AWS call
        self._on_demand = self._table
        self._on_demand_source = f"the shipped table of {self._table.region} (as of {self._table.as_of or '?'})"
        self._spot: SpotPrices | None = None
        self._spot_fetched_at: float | None = None
        self._version = 0
        self._spot_fetch = threading.Lock()  # one spot read at a time
        self._on_demand_fetch = threading.Lock()

    @property
    def version(self) -> int:
        with self._lock:
            return self._version

    @property
    def on_demand_source(self) -> str:
        """Where the current on-demand prices come from, for logs and tests."""
        with self._lock:
            return self._on_demand_source

    def on_demand(self) -> PriceTable:
        with self._lock:
            return self._on_demand

    def spot(self) -> SpotPrices:
        """The current spot prices, read from EC2 first if they never were. Raises CloudProviderError."""
        with self._lock:
            if self._spot is not None:
                return self._spot
        self.refresh_spot(max_age=float("inf"))
        with self._lock:
            assert self._spot is not None
            return self._spot

    def snapshot(self) -> tuple[PriceTable, SpotPrices, int]:
        """On-demand table, spot prices and the version they are, read together."""
        spot = self.spot()
        with self._lock:
            return self._on_demand, self._spot if self._spot is not None else spot, self._version

    def spot_age(self) -> float | None:
        """Seconds since spot prices were last read, None if never."""
        with self._lock:
            return None if self._spot_fetched_at is None else self._clock() - self._spot_fetched_at

    def refresh_spot(self, max_age: float = 0.0) -> bool:
        """Read spot prices again unless they are younger than `max_age` seconds (True when read).
        Raises CloudProviderError when the read fails; the old prices stay."""
        with self._spot_fetch:
            age = self.spot_age()
            if age is not None and age < max_age:
                return False
            prices = fetch_spot_prices(self._ec2)
            with self._lock:
                changed = prices != self._spot
                self._spot, self._spot_fetched_at = prices, self._clock()
                self._version += int(changed)
        log.info("spot prices of %s read: %d instance type x zone prices", self.region, len(prices))
        return True

    def refresh_on_demand(self) -> bool:
        """Ask the Pricing API for the region's on-demand prices: True when it answered (types it leaves
        out keep the table's price). False without a Pricing API client, or when it fails (logged; the
        current prices stay, so provisioning goes on with the shipped table)."""
        if self._pricing is None:
            return False
        with self._on_demand_fetch:
            try:
                answered = fetch_on_demand_prices(self._pricing, self.region)
            except CloudProviderError as error:
                log.warning(
                    "on-demand prices of %s from the AWS Pricing API failed (%s); keeping %s",
                    self.region,
                    error,
                    self.on_demand_source,
                )
                return False
            now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            quoted_in = currency(self.region)
            base = self._table.prices if self._table.currency == quoted_in else {}
            table = PriceTable(self.region, now, {**base, **answered}, quoted_in)
            with self._lock:
                changed = table.prices != self._on_demand.prices
                self._on_demand = table
                self._on_demand_source = f"the AWS Pricing API (as of {now})"
                self._version += int(changed)
        log.info("on-demand prices of %s from the AWS Pricing API: %d instance types", self.region, len(answered))
        return True
