"""The provisioning activity keeps what one solve built for the next: the zone-limited catalog's copies
(ZoneFilter), the catalog's copies with reserved offerings added (ReservedOfferings), and the
instance-type options built from them (scheduling.provisioning.catalog.OptionCache)."""

from __future__ import annotations

from activities.provisioning.provisioner import ReservedOfferings, ZoneFilter
from apis.instancetype import InstanceType, Offering
from apis.labels import CAPACITY_TYPE_RESERVED
from tests.unit.activities.test_provisioning_isolation import World, node_class, node_pool, pending_pod
from tests.unit.scheduling.builders import instance_type

ZONES = frozenset({"us-west-2a", "us-west-2b"})


def zonal_type(name: str) -> InstanceType:
    it = instance_type(name, 2, 8, 0.1)
    offering = it.offerings[0]
    offerings = [offering.model_copy(update={"zone": z}) for z in ("us-west-2a", "us-west-2b", "us-west-2c")]
    return it.model_copy(update={"offerings": offerings})


def test_a_type_handed_out_again_keeps_its_copy_and_a_new_one_or_new_zones_get_a_new_copy() -> None:
    zone_filter, catalog = ZoneFilter(), [zonal_type("m5.large"), zonal_type("c5.large")]
    first = zone_filter.of(catalog, ZONES)
    assert [{o.zone for o in it.offerings} for it in first] == [set(ZONES)] * 2
    assert all(a is b for a, b in zip(zone_filter.of(catalog, ZONES), first, strict=True))
    renewed = [zonal_type("m5.large"), catalog[1]]  # the catalog converted m5.large again
    again = zone_filter.of(renewed, ZONES)
    assert again[0] is not first[0] and again[1] is first[1]
    narrower = zone_filter.of(renewed, frozenset({"us-west-2c"}))
    assert [{o.zone for o in it.offerings} for it in narrower] == [{"us-west-2c"}] * 2


def reserved(zone: str, available: bool = True) -> Offering:
    return Offering(
        zone=zone, capacity_type=CAPACITY_TYPE_RESERVED, price=0.0, available=available, reservation_id="cr-0123"
    )


def test_reserved_offerings_are_added_and_each_copy_is_kept_while_the_reservation_is_the_same() -> None:
    with_reserved, zone_filter = ReservedOfferings(), ZoneFilter()
    catalog = [zonal_type("m5.large"), zonal_type("c5.large")]
    first = with_reserved.added(catalog, {"m5.large": [reserved("us-west-2a")]})
    assert first[1] is catalog[1], "a type with no reservation is the catalog's own"
    assert [o.capacity_type for o in first[0].offerings][-1] == CAPACITY_TYPE_RESERVED
    again = with_reserved.added(catalog, {"m5.large": [reserved("us-west-2a")]})  # read again, equal
    assert again[0] is first[0]
    assert zone_filter.of(again, ZONES)[0] is zone_filter.of(first, ZONES)[0], "so its zone copy is kept too"
    full = with_reserved.added(catalog, {"m5.large": [reserved("us-west-2a", available=False)]})
    assert full[0] is not first[0] and full[0].offerings[-1].available is False


def test_a_second_solve_over_the_same_catalog_builds_no_option_again() -> None:
    world = World([node_class("default"), node_pool("general-purpose", "default"), pending_pod("web-0")])
    world.solve()
    [nc] = [n for n in world.activities.status.refresh().node_classes]
    built = dict(world.activities.options.memo(nc))
    assert built, "the first solve built the node class's options"
    world.solve()
    kept = world.activities.options.memo(nc)
    assert kept.keys() == built.keys()
    assert all(kept[name][1] is built[name][1] for name in built), "every option is the one built before"
