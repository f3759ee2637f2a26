"""Capacity reservations (On-Demand Capacity Reservations and capacity blocks) an EC2NodeClass selects.

`capacityReservationSelectorTerms` are ORed; an `id` term names one reservation, the other fields of a
term (tags, ownerID, instanceMatchCriteria) are ANDed. Only active reservations are selected. A node class
whose terms match nothing is still usable (its launches are on-demand or spot), as in Karpenter, so
nothing here raises NodeClassNotReadyError.

Each reservation's free instances are counted in memory: set from DescribeCapacityReservations'
AvailableInstanceCount on each refresh (at most every `ttl` seconds per set of terms), decreased by
each launch into it (`consume`), and set to none when EC2 refuses a launch into it (`exhaust`), so the
scheduler stops offering it before the next refresh says otherwise.

A capacity block is `expiring` in the last EXPIRING_WINDOW before its end: EC2 begins terminating its
instances 30 minutes before the end time (AWS's "Capacity Blocks for ML" guide) and nothing new should
be launched into it then.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable
from typing import Any

from apis.ec2nodeclass import CapacityReservationSelectorTerm, EC2NodeClass
from apis.instancetype import InstanceType, Offering
from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.nodeclass.resolve import tag_filters
from cloudprovider.aws.sdk import EC2API
from cloudprovider.errors import CloudProviderError
from cloudprovider.types import CapacityReservation

EXPIRING_WINDOW = dt.timedelta(minutes=30)
CAPACITY_BLOCK = "capacity-block"
# Reserved capacity is paid for whether used or not: its offerings cost the on-demand price divided by
# this, near zero so the scheduler prefers it, while keeping the on-demand order among instance types.
RESERVED_PRICE_DIVISOR = 10_000_000.0


def reservation_query(term: CapacityReservationSelectorTerm) -> dict[str, Any]:
    """DescribeCapacityReservations arguments for one term: the id alone, else filters for its tags,
    owner and instance match criteria; always only active reservations."""
    active = {"Name": "state", "Values": ["active"]}
    if term.id:
        return {"CapacityReservationIds": [term.id], "Filters": [active]}
    filters = [*tag_filters(term.tags or {}), active]
    if term.owner_id:
        filters.append({"Name": "owner-id", "Values": [term.owner_id]})
    if term.instance_match_criteria:
        filters.append({"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]})
    return {"Filters": filters}


def _rfc3339(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value or "")


def to_reservation(data: dict[str, Any], now: dt.datetime) -> CapacityReservation:
    """One DescribeCapacityReservations entry; a capacity block within EXPIRING_WINDOW of its end is
    `expiring`."""
    reservation_type = str(data.get("ReservationType") or "default")
    end = data.get("EndDate")
    expiring = reservation_type == CAPACITY_BLOCK and isinstance(end, dt.datetime) and end - now <= EXPIRING_WINDOW
    return CapacityReservation(
        id=str(data["CapacityReservationId"]),
        instance_type=str(data.get("InstanceType", "")),
        zone=str(data.get("AvailabilityZone", "")),
        owner_id=str(data.get("OwnerId", "")),
        instance_match_criteria=str(data.get("InstanceMatchCriteria") or "open"),
        reservation_type=reservation_type,
        state="expiring" if expiring else "active",
        end_time=_rfc3339(end),
        available=int(data.get("AvailableInstanceCount", 0)),
        total=int(data.get("TotalInstanceCount", 0)),
    )


class CapacityReservations:
    """The reservations node classes select, with their free-instance counts (see the module docstring)."""

    def __init__(
        self,
        ec2: EC2API,
        clock: Callable[[], float],
        ttl: float = 60.0,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        """`clock`: monotonic seconds for the refresh; `now`: the wall clock that decides `expiring`."""
        self._ec2 = ec2
        self._clock = clock
        self._ttl = ttl
        self._now = now
        self._lock = threading.Lock()
        self._fetched: dict[str, tuple[float, list[CapacityReservation]]] = {}
        self._available: dict[str, int] = {}

    def selected(self, node_class: EC2NodeClass) -> list[CapacityReservation]:
        """The active reservations the node class's terms match, sorted by id, `available` as counted
        now. [] without terms (no call)."""
        terms = node_class.spec.capacity_reservation_selector_terms or []
        if not terms:
            return []
        key = json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in terms], sort_keys=True)
        with self._lock:
            cached = self._fetched.get(key)
        if cached is None or self._clock() - cached[0] >= self._ttl:
            found = self._describe(terms)
            with self._lock:
                self._fetched[key] = (self._clock(), found)
                self._available.update({r.id: r.available for r in found})
            cached = self._fetched[key]
        with self._lock:
            return [r.model_copy(update={"available": self._available.get(r.id, 0)}) for r in cached[1]]

    def consume(self, reservation_id: str) -> None:
        """One instance was launched into the reservation."""
        with self._lock:
            self._available[reservation_id] = max(0, self._available.get(reservation_id, 0) - 1)

    def exhaust(self, reservation_id: str) -> None:
        """EC2 refused a launch into the reservation: offer it no more until a refresh says otherwise."""
        with self._lock:
            self._available[reservation_id] = 0

    def _describe(self, terms: list[CapacityReservationSelectorTerm]) -> list[CapacityReservation]:
        now = self._now()
        found: dict[str, CapacityReservation] = {}
        for term in terms:
            for data in self._pages(reservation_query(term)):
                reservation = to_reservation(data, now)
                found[reservation.id] = reservation
        return [found[i] for i in sorted(found)]

    def _pages(self, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                page = call(
                    "DescribeCapacityReservations",
                    self._ec2.describe_capacity_reservations,
                    **kwargs,
                    **({"NextToken": token} if token else {}),
                )
            except CloudProviderError as error:
                if has_code(error, "InvalidCapacityReservationId.*"):
                    return []  # an id term that matches nothing selects nothing
                raise
            items += page.get("CapacityReservations", [])
            token = page.get("NextToken")
            if not token:
                return items


def with_reserved_offerings(types: list[InstanceType], reservations: list[CapacityReservation]) -> list[InstanceType]:
    """`types` plus one `reserved` offering per reservation of that type in a zone the type is offered
    in, priced at its on-demand price / RESERVED_PRICE_DIVISOR, available while the reservation is
    active and has a free instance. Types without a reservation are returned as they are."""
    by_type: dict[str, list[CapacityReservation]] = {}
    for reservation in reservations:
        by_type.setdefault(reservation.instance_type, []).append(reservation)
    out = []
    for it in types:
        if it.name not in by_type:  # nearly every type: each launch reads the whole catalog
            out.append(it)
            continue
        zones = {o.zone for o in it.offerings}
        on_demand = [o.price for o in it.offerings if o.capacity_type == "on-demand"]
        mine = [r for r in by_type[it.name] if r.zone in zones]
        if mine and on_demand:
            reserved = [
                Offering(
                    zone=r.zone,
                    capacity_type="reserved",
                    price=min(on_demand) / RESERVED_PRICE_DIVISOR,
                    available=r.state == "active" and r.available > 0,
                    reservation_id=r.id,
                    reservation_type=r.reservation_type,
                )
                for r in mine
            ]
            it = it.model_copy(update={"offerings": [*it.offerings, *reserved]})
        out.append(it)
    return out
