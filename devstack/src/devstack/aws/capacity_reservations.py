"""Capacity reservations for the local stack: moto 5.2.5 has no CreateCapacityReservation or
DescribeCapacityReservations (local stack only, never product code).

Reservations live in memory per EC2 backend (account and region) with their tags, owner, zone, instance
type, instance count, match criteria, type and state. A reservation's AvailableInstanceCount is its
count minus the live instances launched into it, so terminating an instance frees its place. CreateFleet
(devstack.aws.patches) launches into the reservation a launch template targets
(`CapacityReservationSpecification.CapacityReservationTarget`) and refuses with
ReservationCapacityExceeded when it has no room or does not hold that instance type in that zone, as
EC2 does. `add_capacity_block` makes a capacity block (EC2 sells them through PurchaseCapacityBlock,
which the local stack does not model).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.utils import random_id

LIVE_STATES = ("pending", "running", "stopping", "stopped")
CAPACITY_BLOCK = "capacity-block"


@dataclass
class Reservation:
    id: str
    owner_id: str
    instance_type: str
    zone: str
    count: int
    instance_match_criteria: str = "open"
    reservation_type: str = "default"
    state: str = "active"
    platform: str = "Linux/UNIX"
    tenancy: str = "default"
    end_date: dt.datetime | None = None
    created: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    tags: dict[str, str] = field(default_factory=dict)


def reservations(backend: Any) -> dict[str, Reservation]:
    """The reservations of one moto EC2 backend (created empty on first use)."""
    found: dict[str, Reservation] = backend.__dict__.setdefault("nodeflow_capacity_reservations", {})
    return found


def in_use(backend: Any, reservation_id: str) -> int:
    """How many live instances run in the reservation."""
    return sum(
        1
        for i in backend.all_instances()
        if getattr(i, "capacity_reservation_id", None) == reservation_id and i.state in LIVE_STATES
    )


def available(backend: Any, reservation: Reservation) -> int:
    return max(0, reservation.count - in_use(backend, reservation.id)) if reservation.state == "active" else 0


def add_reservation(backend: Any, **kwargs: Any) -> Reservation:
    """A new reservation in `backend` (fields as `Reservation`'s; id and owner chosen here)."""
    reservation = Reservation(id=random_id("cr"), owner_id=str(backend.account_id), **kwargs)
    reservations(backend)[reservation.id] = reservation
    return reservation


def add_capacity_block(backend: Any, instance_type: str, zone: str, count: int, end: dt.datetime) -> Reservation:
    """A capacity block: a targeted reservation of type capacity-block that ends at `end`."""
    return add_reservation(
        backend,
        instance_type=instance_type,
        zone=zone,
        count=count,
        instance_match_criteria="targeted",
        reservation_type=CAPACITY_BLOCK,
        end_date=end,
    )


def _as_api(backend: Any, r: Reservation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "CapacityReservationId": r.id,
        "OwnerId": r.owner_id,
        "CapacityReservationArn": f"arn:aws:ec2:{backend.region_name}:{r.owner_id}:capacity-reservation/{r.id}",
        "InstanceType": r.instance_type,
        "InstancePlatform": r.platform,
        "AvailabilityZone": r.zone,
        "Tenancy": r.tenancy,
        "TotalInstanceCount": r.count,
        "AvailableInstanceCount": available(backend, r),
        "State": r.state,
        "StartDate": r.created,
        "EndDateType": "limited" if r.end_date else "unlimited",
        "InstanceMatchCriteria": r.instance_match_criteria,
        "CreateDate": r.created,
        "ReservationType": r.reservation_type,
        "Tags": [{"Key": k, "Value": v} for k, v in sorted(r.tags.items())],
    }
    if r.end_date:
        out["EndDate"] = r.end_date
    return out


def _matches(r: Reservation, name: str, values: list[str]) -> bool:
    if name.startswith("tag:"):
        return r.tags.get(name[4:]) in values
    fields = {
        "tag-key": lambda: [k for k in r.tags if k in values],
        "owner-id": lambda: r.owner_id in values,
        "instance-match-criteria": lambda: r.instance_match_criteria in values,
        "state": lambda: r.state in values,
        "instance-type": lambda: r.instance_type in values,
        "availability-zone": lambda: r.zone in values,
        "reservation-type": lambda: r.reservation_type in values,
    }
    if name not in fields:
        raise EC2ClientError("InvalidParameterValue", f"The filter '{name}' is invalid")
    return bool(fields[name]())


def create_capacity_reservation(self: Any) -> ActionResult:
    """CreateCapacityReservation: an active default reservation, tagged from TagSpecifications."""
    self.error_on_dryrun()
    instance_type, zone = self._get_param("InstanceType"), self._get_param("AvailabilityZone")
    count = int(self._get_param("InstanceCount", 0))
    if not instance_type or not zone or count < 1:
        raise EC2ClientError(
            "InvalidParameterValue", "InstanceType, AvailabilityZone and an InstanceCount of at least 1 are required"
        )
    tags = self._parse_tag_specification().get("capacity-reservation", {})
    end = self._get_param("EndDate")
    reservation = add_reservation(
        self.ec2_backend,
        instance_type=instance_type,
        zone=zone,
        count=count,
        instance_match_criteria=self._get_param("InstanceMatchCriteria") or "open",
        platform=self._get_param("InstancePlatform") or "Linux/UNIX",
        tenancy=self._get_param("Tenancy") or "default",
        end_date=dt.datetime.fromisoformat(end.replace("Z", "+00:00")) if isinstance(end, str) else end,
        tags=dict(tags),
    )
    return ActionResult({"CapacityReservation": _as_api(self.ec2_backend, reservation)})


def describe_capacity_reservations(self: Any) -> ActionResult:
    """DescribeCapacityReservations by CapacityReservationIds (an unknown id is an error, as in EC2) and
    Filters (tag:<key>, tag-key, owner-id, instance-match-criteria, state, instance-type,
    availability-zone, reservation-type)."""
    self.error_on_dryrun()
    known = reservations(self.ec2_backend)
    ids = self._get_param("CapacityReservationIds", [])
    for rid in ids:
        if rid not in known:
            raise EC2ClientError(
                "InvalidCapacityReservationId.NotFound", f"The capacity reservation ID '{rid}' does not exist"
            )
    filters = self._filters_from_querystring()
    candidates = [known[i] for i in ids] if ids else list(known.values())
    chosen = [r for r in candidates if all(_matches(r, name, list(values)) for name, values in filters.items())]
    chosen.sort(key=lambda r: r.id)
    return ActionResult({"CapacityReservations": [_as_api(self.ec2_backend, r) for r in chosen]})


def targeted(backend: Any, template_data: dict[str, Any]) -> tuple[str, Reservation | None]:
    """The reservation id a launch template's data targets ('' for none) and the reservation (None when
    there is no such reservation)."""
    spec = template_data.get("CapacityReservationSpecification") or {}
    rid = str((spec.get("CapacityReservationTarget") or {}).get("CapacityReservationId") or "")
    return rid, reservations(backend).get(rid) if rid else None


def refusal(backend: Any, reservation_id: str, reservation: Reservation | None, instance_type: str, zone: str) -> str:
    """Why EC2 would not launch `instance_type` in `zone` into the reservation ('' when it would)."""
    if reservation is None:
        return f"The capacity reservation ID '{reservation_id}' does not exist"
    if reservation.instance_type != instance_type or reservation.zone != zone:
        return f"Capacity reservation {reservation.id} holds {reservation.instance_type} in {reservation.zone}"
    if available(backend, reservation) < 1:
        return f"Insufficient capacity in capacity reservation {reservation.id}"
    return ""


def launched_into(backend: Any, instance_id: str, reservation: Reservation) -> None:
    """Record that the instance runs in the reservation (a capacity block's instance has that lifecycle)."""
    instance = backend.get_instance(instance_id)
    instance.capacity_reservation_id = reservation.id
    if reservation.reservation_type == CAPACITY_BLOCK:
        instance.lifecycle = CAPACITY_BLOCK
