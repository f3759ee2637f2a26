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


def test_applied_to_marks_refused_offerings_and_keeps_every_other_type_as_it_was() -> None:
    from tests.unit.scheduling.builders import instance_type

    cache = UnavailableOfferings()
    types = [instance_type("m5.large", 2, 8, 0.1), instance_type("c5.large", 2, 4, 0.09)]
    assert all(a is b for a, b in zip(cache.applied_to(types), types, strict=True)), "nothing refused: no copies"
    refused = types[0].offerings[0]
    cache.mark("m5.large", refused.zone, refused.capacity_type)
    cache.mark("c5.large", "no-such-zone", "spot")  # refuses no offering c5.large has
    marked, kept = cache.applied_to(types)
    assert kept is types[1]
    assert marked is not types[0] and types[0].offerings[0].available, "the catalog's own object is unchanged"
    assert [o.available for o in marked.offerings] == [False, *(o.available for o in types[0].offerings[1:])]
