"""Keeps the provider's prices current: the worker's price refresher.

Karpenter's pricing controller reads on-demand prices from the AWS Pricing API and spot prices from
DescribeSpotPriceHistory at start and every 12 hours. Every worker replica runs one `PriceRefresher` in a
thread (workers.worker), since each serves provisioning and disruption activities from its own
instance-type catalog: on-demand prices every `on_demand_interval` seconds (None: never, the shipped
table stays, as Karpenter's isolated-VPC mode), spot prices every `spot_interval` (None: only the read of
the catalog's first use). The price book (cloudprovider.aws.pricing.pricebook) swaps in a refresh's prices at
once, so provisioning never waits for one; the catalog rebuilds its offerings on the next read, and the
scheduler and consolidation see the new prices from then on.

A refresh that fails (logged by the price book, or here) keeps the old prices and is tried again after
`RETRY_SECONDS` (or the interval, if shorter).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from cloudprovider.aws.pricing.pricebook import PriceBook
from cloudprovider.errors import CloudProviderError

log = logging.getLogger(__name__)
RETRY_SECONDS = 15 * 60.0


class PriceRefresher:
    """See the module docstring. `run(stop)` until `stop` is set; `tick()` is one pass (tests call it
    with a fake `clock`, the one the price book dates its reads with)."""

    def __init__(
        self,
        book: PriceBook,
        on_demand_interval: float | None,
        spot_interval: float | None,
        clock: Callable[[], float] = time.monotonic,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        for name, value in (("on_demand_interval", on_demand_interval), ("spot_interval", spot_interval)):
            if value is not None and value <= 0:
                raise ValueError(f"PriceRefresher: {name} must be positive or None, got {value}")
        self.book = book
        self.on_demand_interval = on_demand_interval
        self.spot_interval = spot_interval
        self._clock = clock
        self._retry = retry_seconds
        self._next_on_demand = clock()  # both due at the first tick
        self._next_spot = clock()

    def run(self, stop: threading.Event) -> None:
        """Refresh what is due, wait until the next one is, until `stop`."""
        while not stop.is_set():
            stop.wait(self.tick())

    def tick(self) -> float:
        """Refresh what is due now; returns the seconds until the next refresh is due. Never raises."""
        now = self._clock()
        if self.on_demand_interval is not None and now >= self._next_on_demand:
            answered = self.book.refresh_on_demand()
            self._next_on_demand = now + (
                self.on_demand_interval if answered else self._retry_after(self.on_demand_interval)
            )
        if self.spot_interval is not None and now >= self._next_spot:
            self._next_spot = now + self._refresh_spot(self.spot_interval)
        due = [
            t for t, i in ((self._next_on_demand, self.on_demand_interval), (self._next_spot, self.spot_interval)) if i
        ]
        return max(0.0, min(due) - now) if due else 3600.0

    def _refresh_spot(self, interval: float) -> float:
        """Read spot prices unless the catalog's first use just did; the seconds until the next read."""
        try:
            self.book.refresh_spot(max_age=interval)
        except CloudProviderError as error:
            log.warning("spot prices of %s could not be read (%s); keeping the last ones", self.book.region, error)
            return self._retry_after(interval)
        age = self.book.spot_age() or 0.0
        return max(0.0, interval - age)

    def _retry_after(self, interval: float) -> float:
        return min(interval, self._retry)
