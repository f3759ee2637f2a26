"""The instance-type catalog of a region: EC2 descriptions and zone offerings (cached with a TTL), on-demand
and spot prices from the price book (cloudprovider.aws.pricing.pricebook, refreshed on its own intervals),
availability from the unavailable-offerings cache.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from apis.instancetype import InstanceType, Offering
from cloudprovider.aws.errors import call
from cloudprovider.aws.instancetypes.translate import InstanceTypeSettings, is_supported, to_instance_type
from cloudprovider.aws.pricing.pricebook import PriceBook
from cloudprovider.aws.pricing.tables import PriceTable
from cloudprovider.aws.sdk import EC2API
from cloudprovider.unavailable import UnavailableOfferings


@dataclass(frozen=True)
class RegionCatalog:
    """What EC2 says about the region: type descriptions and zones per type."""

    infos: dict[str, dict[str, Any]]
    zones: dict[str, tuple[str, ...]]


def _pages(operation: str, fn: Callable[..., dict[str, Any]], key: str, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = call(operation, fn, **kwargs, **({"NextToken": token} if token else {}))
        items += page.get(key, [])
        token = page.get("NextToken")
        if not token:
            return items


def fetch_region_catalog(ec2: EC2API) -> RegionCatalog:
    """Read every instance type and its zone offerings."""
    infos = {
        i["InstanceType"]: i for i in _pages("DescribeInstanceTypes", ec2.describe_instance_types, "InstanceTypes")
    }
    zones: dict[str, set[str]] = {}
    offerings = _pages(
        "DescribeInstanceTypeOfferings",
        ec2.describe_instance_type_offerings,
        "InstanceTypeOfferings",
        LocationType="availability-zone",
    )
    for o in offerings:
        zones.setdefault(o["InstanceType"], set()).add(o["Location"])
    return RegionCatalog(infos=infos, zones={name: tuple(sorted(z)) for name, z in zones.items()})


def build_offerings(
    info: dict[str, Any], zones: Sequence[str], prices: PriceTable, spot_prices: dict[tuple[str, str], float]
) -> list[Offering]:
    """Offerings per zone x capacity type the type supports and we can price."""
    name = info["InstanceType"]
    usage = set(info.get("SupportedUsageClasses", ["on-demand"]))
    on_demand = prices.on_demand(name)
    out: list[Offering] = []
    for zone in zones:
        if "on-demand" in usage and on_demand is not None:
            out.append(Offering(zone=zone, capacity_type="on-demand", price=on_demand))
        spot = spot_prices.get((name, zone))
        if "spot" in usage and spot is not None:
            out.append(Offering(zone=zone, capacity_type="spot", price=spot))
    return out


class InstanceTypeCatalog:
    """Converted instance types per (settings, zones), rebuilt when the EC2 data expires (`ttl` seconds)
    or the price book's prices change."""

    def __init__(
        self,
        ec2: EC2API,
        prices: PriceBook,
        unavailable: UnavailableOfferings,
        clock: Callable[[], float],
        ttl: float = 3600.0,
    ) -> None:
        self._ec2 = ec2
        self._prices = prices
        self._unavailable = unavailable
        self._clock = clock
        self._ttl = ttl
        self._lock = threading.Lock()
        self._region: RegionCatalog | None = None
        self._fetched_at = 0.0
        self._converted: dict[str, list[InstanceType]] = {}
        self._prices_version = -1

    def region(self) -> RegionCatalog:
        with self._lock:
            if self._region is None or self._clock() - self._fetched_at >= self._ttl:
                self._region = fetch_region_catalog(self._ec2)
                self._fetched_at = self._clock()
                self._converted = {}
            return self._region

    def instance_types(self, settings: InstanceTypeSettings, zones: Sequence[str] | None) -> list[InstanceType]:
        """Every supported type offered in `zones` (None = all), sorted by name, availability applied."""
        region = self.region()
        on_demand, spot, version = self._prices.snapshot()
        key = json.dumps([repr(settings), sorted(zones) if zones is not None else None])
        with self._lock:
            if version != self._prices_version:
                self._converted, self._prices_version = {}, version
            converted = self._converted.get(key)
        if converted is None:
            converted = self._convert(region, settings, zones, on_demand, spot)
            with self._lock:
                if version == self._prices_version:
                    self._converted[key] = converted
        return self._unavailable.applied_to(converted)

    def _convert(
        self,
        region: RegionCatalog,
        settings: InstanceTypeSettings,
        zones: Sequence[str] | None,
        on_demand: PriceTable,
        spot: dict[tuple[str, str], float],
    ) -> list[InstanceType]:
        allowed = set(zones) if zones is not None else None
        out = []
        for name in sorted(region.infos):
            info = region.infos[name]
            if not is_supported(info):
                continue
            offered = [z for z in region.zones.get(name, ()) if allowed is None or z in allowed]
            offerings = build_offerings(info, offered, on_demand, spot)
            if offerings:
                out.append(to_instance_type(info, offerings, settings))
        return out
