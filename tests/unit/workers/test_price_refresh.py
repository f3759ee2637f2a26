"""The price refresher's schedule on a fake clock, with a price book that counts (no AWS)."""

from __future__ import annotations

import pytest

from activities.provisioning.price_refresh import PriceRefresher
from cloudprovider.errors import CloudProviderError


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


class CountingBook:
    """The PriceBook surface the refresher uses; `fail_spot` makes the next spot read fail."""

    region = "us-west-2"

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.on_demand_reads = 0
        self.spot_reads = 0
        self.spot_read_at: float | None = None
        self.answer = True
        self.fail_spot = False

    def refresh_on_demand(self) -> bool:
        self.on_demand_reads += 1
        return self.answer

    def refresh_spot(self, max_age: float = 0.0) -> bool:
        age = self.spot_age()
        if age is not None and age < max_age:
            return False
        if self.fail_spot:
            self.fail_spot = False
            raise CloudProviderError("RequestLimitExceeded")
        self.spot_reads += 1
        self.spot_read_at = self.clock()
        return True

    def spot_age(self) -> float | None:
        return None if self.spot_read_at is None else self.clock() - self.spot_read_at


def refresher(on_demand: float | None, spot: float | None) -> tuple[PriceRefresher, CountingBook, Clock]:
    clock = Clock()
    book = CountingBook(clock)
    return PriceRefresher(book, on_demand, spot, clock, retry_seconds=300), book, clock  # type: ignore[arg-type]


def test_both_are_read_at_start_then_on_their_intervals() -> None:
    prices, book, clock = refresher(43200, 7200)
    assert prices.tick() == 7200
    assert (book.on_demand_reads, book.spot_reads) == (1, 1)
    clock.now = 7199
    assert prices.tick() == 1
    assert (book.on_demand_reads, book.spot_reads) == (1, 1)
    clock.now = 43200
    prices.tick()
    assert (book.on_demand_reads, book.spot_reads) == (2, 2)


def test_failures_are_tried_again_after_the_retry_delay_and_the_old_prices_stay() -> None:
    prices, book, clock = refresher(43200, 7200)
    book.answer, book.fail_spot = False, True
    assert prices.tick() == 300
    assert (book.on_demand_reads, book.spot_reads) == (1, 0)
    book.answer = True
    clock.now = 300
    assert prices.tick() == 7200
    assert (book.on_demand_reads, book.spot_reads) == (2, 1)


def test_never_means_no_refresh_of_that_kind() -> None:
    prices, book, _ = refresher(None, 7200)
    prices.tick()
    assert (book.on_demand_reads, book.spot_reads) == (0, 1)
    with pytest.raises(ValueError, match="spot_interval"):
        PriceRefresher(book, None, 0)  # type: ignore[arg-type]
