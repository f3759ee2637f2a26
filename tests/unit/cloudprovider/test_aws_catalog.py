"""The shipped built-in catalog for `nodeflow simulate`."""

from __future__ import annotations

import pytest

from apis.instancetype import InstanceType, Offering
from cloudprovider.aws.instancetypes.catalog import decode, encode, load_builtin_catalog


def test_builtin_catalog_loads_sorted_with_offerings_and_prices() -> None:
    catalog = load_builtin_catalog()
    assert len(catalog) > 1000
    names = [it.name for it in catalog]
    assert names == sorted(names)
    m5 = next(it for it in catalog if it.name == "m5.large")
    assert m5.capacity["cpu"] == "2" and m5.capacity["pods"] == "29"
    assert {(o.zone, o.capacity_type) for o in m5.offerings} == {
        (z, ct) for z in ("us-west-2a", "us-west-2b", "us-west-2c") for ct in ("on-demand", "spot")
    }
    spot = [o.price for o in m5.offerings if o.capacity_type == "spot"]
    assert all(0.3 * 0.096 <= p <= 0.4 * 0.096 for p in spot)


def test_encode_decode_round_trip_is_deterministic() -> None:
    it = InstanceType(
        name="m5.large",
        capacity={"cpu": "2"},
        overhead={"cpu": "70m"},
        labels={"a": "b"},
        offerings=[Offering(zone="z1", capacity_type="spot", price=0.03)],
    )
    data = encode("r", ["z1"], [it])
    assert data == encode("r", ["z1"], [it])
    assert decode(data) == [it]


def test_unknown_region_names_what_is_shipped() -> None:
    with pytest.raises(ValueError, match="catalog-us-west-2"):
        load_builtin_catalog("mars-north-1")
