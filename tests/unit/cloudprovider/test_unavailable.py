"""The unavailable-offerings cache, with an injected clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cloudprovider.errors import UnavailableOffering
from cloudprovider.unavailable import UnavailableOfferings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_marked_offerings_expire_after_the_ttl() -> None:
    clock = Clock()
    cache = UnavailableOfferings(ttl=timedelta(minutes=3), clock=clock)
    cache.mark("m5.large", "us-west-2a", "spot")
    assert cache.is_unavailable("m5.large", "us-west-2a", "spot")
    assert not cache.is_unavailable("m5.large", "us-west-2a", "on-demand")
    clock.now += 179
    assert cache.is_unavailable("m5.large", "us-west-2a", "spot")
    clock.now += 1
    assert not cache.is_unavailable("m5.large", "us-west-2a", "spot")
    assert cache.snapshot() == []


def test_marking_again_extends_and_snapshot_is_sorted() -> None:
    clock = Clock()
    cache = UnavailableOfferings(clock=clock)
    cache.mark_all(
        [
            UnavailableOffering("m5.large", "us-west-2b", "spot"),
            UnavailableOffering("c5.large", "us-west-2a", "on-demand"),
        ]
    )
    clock.now += 120
    cache.mark("m5.large", "us-west-2b", "spot")
    clock.now += 120
    assert cache.snapshot() == [UnavailableOffering("m5.large", "us-west-2b", "spot")]


def test_ttl_must_be_positive() -> None:
    with pytest.raises(ValueError, match="ttl"):
        UnavailableOfferings(ttl=timedelta(0))
