"""Patches to moto for what real EC2 does and moto does not (local stack only, never product code).

- CreateFleet launches the cheapest override (spot price for spot) instead of the first one; honours
  `Priority` for the *-prioritized strategies; refuses offerings with injected insufficient capacity
  (real `Errors` entries, no instance when every override fails); repeats the result for a ClientToken.
  A DryRun answers DryRunOperation before any subnet or launch template is looked at, as EC2 answers it
  from the caller's permissions.
- DescribeSpotPriceHistory returns deterministic prices (30-40% of on-demand) stamped now.
- Every instance type moto knows is offered in the first three zones of each seeded region.
- CreateCapacityReservation and DescribeCapacityReservations exist (devstack.aws.capacity_reservations),
  and CreateFleet launches into the reservation a launch template targets (ReservationCapacityExceeded
  when it has no room), for a capacity block with the capacity-block market.
- CreatePlacementGroup, DescribePlacementGroups and DeletePlacementGroup exist (devstack.aws.placement_groups),
  and CreateFleet launches into the placement group a launch template names (`Placement`), in a partition
  group into a partition.
- DescribeImages knows deprecated AMIs (`DeprecatableAmi`): it returns their DeprecationTime and, as EC2
  does, leaves out those whose time has passed unless IncludeDeprecated is true or they are named in
  ImageIds (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ami-deprecate.html).

The patches are process-wide but read the fault state of the server handling the request (set per
request by `devstack.aws.wsgi`), so two servers in one process keep separate faults.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
import uuid
from typing import Any
from xml.sax.saxutils import escape

from moto.core.responses import ActionResult
from moto.ec2.models.amis import Ami
from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS, INSTANCE_TYPES
from moto.ec2.responses import EC2Response
from moto.ec2.responses.amis import AmisResponse
from moto.ec2.responses.fleets import Fleets
from moto.ec2.responses.spot_instances import SpotInstances

from apis.meta import parse_rfc3339
from cloudprovider.aws.pricing.tables import load_price_table
from devstack.aws import capacity_reservations, placement_groups
from devstack.aws.faults import FaultStore

_installed = threading.Lock()
_state: dict[str, Any] = {}
_request = threading.local()
EC2_XMLNS = "http://ec2.amazonaws.com/doc/2016-11-15/"
PRIORITIZED = ("prioritized", "capacity-optimized-prioritized")


def set_request_faults(faults: FaultStore | None) -> None:
    """Called by the WSGI layer: the fault store of the server handling this thread's request."""
    _request.faults = faults


def _faults() -> FaultStore | None:
    return getattr(_request, "faults", None)


def spot_price(instance_type: str, zone: str) -> float | None:
    """Deterministic spot price: 30-40% of on-demand, varying by (type, zone). None without an on-demand price."""
    on_demand = load_price_table().on_demand(instance_type)
    if on_demand is None:
        return None
    fraction = int(hashlib.sha256(f"{instance_type}/{zone}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return round(on_demand * (0.30 + 0.10 * fraction), 5)


def _price(instance_type: str, zone: str, capacity_type: str) -> float:
    price = spot_price(instance_type, zone) if capacity_type == "spot" else load_price_table().on_demand(instance_type)
    return price if price is not None else float("inf")


def _zone(handler: Fleets, override: dict[str, Any]) -> str:
    if override.get("AvailabilityZone"):
        return str(override["AvailabilityZone"])
    if override.get("SubnetId"):
        return str(handler.ec2_backend.get_subnet(override["SubnetId"]).availability_zone)
    return ""


def _ice_error(
    config: dict[str, Any], override: dict[str, Any], zone: str, capacity_type: str, reservation_refusal: str = ""
) -> dict[str, Any]:
    instance_type = override.get("InstanceType")
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
            "Overrides": override,
        },
        "Lifecycle": capacity_type,
        "ErrorCode": "ReservationCapacityExceeded" if reservation_refusal else "InsufficientInstanceCapacity",
        "ErrorMessage": reservation_refusal
        or f"We currently do not have sufficient {instance_type} capacity in the Availability Zone you "
        f"requested ({zone}). Our system will be working on provisioning additional capacity.",
    }


def _template_data(handler: Fleets, config: dict[str, Any]) -> dict[str, Any]:
    """The data of the launch template version a LaunchTemplateConfigs entry names ({} when unknown)."""
    spec = config.get("LaunchTemplateSpecification", {})
    backend = handler.ec2_backend
    try:
        if spec.get("LaunchTemplateId"):
            template = backend.get_launch_template(template_id=spec["LaunchTemplateId"])
        else:
            template = backend.get_launch_template_by_name(name=spec.get("LaunchTemplateName", ""))
        return dict(template.get_version(spec.get("Version", "$Latest")).data)
    except Exception:  # moto raises its own not-found errors; CreateFleet reports them itself
        return {}


def _create_fleet(self: Fleets) -> ActionResult:
    self.error_on_dryrun()  # EC2 answers a dry run from the caller's permissions alone, before any lookup
    faults = _faults()
    token = self._get_param("ClientToken")
    if faults is not None and token and (cached := faults.fleet_result(token)) is not None:
        return ActionResult(cached)
    target = self._get_param("TargetCapacitySpecification", {})
    capacity_type = target.get("DefaultTargetCapacityType", "on-demand")
    if capacity_type == capacity_reservations.CAPACITY_BLOCK:  # moto launches on-demand or spot only
        self.params["TargetCapacitySpecification"] = {**target, "DefaultTargetCapacityType": "on-demand"}
    options = self._get_param("SpotOptions" if capacity_type == "spot" else "OnDemandOptions", {}) or {}
    by_priority = options.get("AllocationStrategy") in PRIORITIZED
    errors: list[dict[str, Any]] = []
    configs = self._get_param("LaunchTemplateConfigs", [])
    targets: dict[str, capacity_reservations.Reservation] = {}  # launch template name or id -> reservation
    placed: dict[str, placement_groups.Group] = {}  # launch template name or id -> placement group
    for config in configs:
        data = _template_data(self, config)
        reservation_id, reservation = capacity_reservations.targeted(self.ec2_backend, data)
        if (group := placement_groups.targeted(self.ec2_backend, data)) is not None:
            spec = config["LaunchTemplateSpecification"]
            placed[spec.get("LaunchTemplateName") or spec.get("LaunchTemplateId", "")] = group
        kept = []
        for override in config.get("Overrides") or []:
            zone = _zone(self, override)
            if faults is not None and faults.capacity_refused(override.get("InstanceType", ""), zone, capacity_type):
                errors.append(_ice_error(config, override, zone, capacity_type))
                continue
            if reservation_id and (
                why := capacity_reservations.refusal(
                    self.ec2_backend, reservation_id, reservation, override.get("InstanceType", ""), zone
                )
            ):
                errors.append(_ice_error(config, override, zone, capacity_type, why))
                continue
            if reservation is not None:
                spec = config["LaunchTemplateSpecification"]
                targets[spec.get("LaunchTemplateName") or spec.get("LaunchTemplateId", "")] = reservation
            rank = (
                float(override.get("Priority", 0))
                if by_priority
                else _price(override["InstanceType"], zone, capacity_type)
            )
            kept.append((rank, override))
        kept.sort(key=lambda item: item[0])
        config["_rank"] = kept[0][0] if kept else float("inf")
        config["Overrides"] = [override for _, override in kept]
    configs = sorted((c for c in configs if c["Overrides"]), key=lambda c: c.pop("_rank"))
    if not configs:
        result: dict[str, Any] = {"FleetId": f"fleet-{uuid.uuid4()}", "Errors": errors, "Instances": []}
    else:
        self.params["LaunchTemplateConfigs"] = configs
        response = _state["create_fleet"](self)
        result = dict(response.result)
        if errors:
            result["Errors"] = errors
        _record_reservations(self, result, targets)
        _record_placement(self, result, placed)
    if faults is not None and token:
        faults.remember_fleet(token, result)
    return ActionResult(result)


def _record_reservations(
    handler: Fleets, result: dict[str, Any], targets: dict[str, capacity_reservations.Reservation]
) -> None:
    """Mark the instances launched from a template that targets a reservation as running in it."""
    for group in result.get("Instances") or []:
        spec = (group.get("LaunchTemplateAndOverrides") or {}).get("LaunchTemplateSpecification") or {}
        reservation = targets.get(spec.get("LaunchTemplateName", "")) or targets.get(spec.get("LaunchTemplateId", ""))
        if reservation is not None:
            for instance_id in group.get("InstanceIds", []):
                capacity_reservations.launched_into(handler.ec2_backend, instance_id, reservation)


def _record_placement(handler: Fleets, result: dict[str, Any], placed: dict[str, placement_groups.Group]) -> None:
    """Put the instances launched from a template that names a placement group into it."""
    for group in result.get("Instances") or []:
        spec = (group.get("LaunchTemplateAndOverrides") or {}).get("LaunchTemplateSpecification") or {}
        target = placed.get(spec.get("LaunchTemplateName", "")) or placed.get(spec.get("LaunchTemplateId", ""))
        if target is not None:
            for instance_id in group.get("InstanceIds", []):
                placement_groups.launched_into(handler.ec2_backend, instance_id, target)


def _describe_spot_price_history(self: SpotInstances) -> str:
    """The answer as EC2 writes it. Built as text: moto's serializer spends half a second of CPU on the
    4,000 entries of a region, and every worker start asks for them."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    entries = self.ec2_backend.describe_spot_price_history(
        self._get_param("InstanceTypes", []), self._filters_from_querystring()
    )
    items = []
    for entry in entries:
        price = spot_price(entry["InstanceType"], entry["Location"])
        if price is not None:
            items.append(
                f"<item><instanceType>{escape(entry['InstanceType'])}</instanceType>"
                "<productDescription>Linux/UNIX</productDescription>"
                f"<spotPrice>{price:.5f}</spotPrice><timestamp>{now}</timestamp>"
                f"<availabilityZone>{escape(entry['Location'])}</availabilityZone></item>"
            )
    return (
        f'<DescribeSpotPriceHistoryResponse xmlns="{EC2_XMLNS}"><requestId>{uuid.uuid4()}</requestId>'
        f"<spotPriceHistorySet>{''.join(items)}</spotPriceHistorySet><nextToken/>"
        "</DescribeSpotPriceHistoryResponse>"
    )


class DeprecatableAmi(Ami):
    """A moto AMI with a DeprecationTime (moto 5 has none); serialized as DescribeImages' DeprecationTime."""

    def __init__(self, *args: Any, deprecation_time: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deprecation_time = deprecation_time  # "2025-01-01T00:00:00.000Z", EC2's format


def _hidden_as_deprecated(image: Any, now: dt.datetime) -> bool:
    """True when `image` has a DeprecationTime at or before `now`."""
    deprecation = parse_rfc3339(getattr(image, "deprecation_time", None))
    return deprecation is not None and deprecation <= now


def _describe_images(self: AmisResponse) -> ActionResult:
    """moto's answer minus the deprecated AMIs EC2 would leave out (none when IncludeDeprecated is true;
    never one named in ImageIds)."""
    response = _state["describe_images"](self)
    if self._get_bool_param("IncludeDeprecated", False):
        return response  # type: ignore[no-any-return]
    named = set(self._get_param("ImageIds", []))
    now = dt.datetime.now(dt.UTC)
    images = [i for i in response.result["Images"] if i.id in named or not _hidden_as_deprecated(i, now)]
    return ActionResult({**response.result, "Images": images})


def offer_everywhere(region: str, zones: list[str]) -> None:
    """Offer every instance type moto knows in `zones` (moto's data leaves gaps)."""
    offerings = INSTANCE_TYPE_OFFERINGS["availability-zone"].setdefault(region, [])
    present = {(o["InstanceType"], o["Location"]) for o in offerings}
    for name in sorted(INSTANCE_TYPES):
        for zone in zones:
            if (name, zone) not in present:
                offerings.append({"InstanceType": name, "Location": zone, "LocationType": "availability-zone"})


def install() -> None:
    """Apply the patches once per process (idempotent)."""
    with _installed:
        if "create_fleet" in _state:
            return
        _state["create_fleet"] = Fleets.create_fleet
        _state["describe_spot_price_history"] = SpotInstances.describe_spot_price_history
        _state["describe_images"] = AmisResponse.describe_images
        AmisResponse.describe_images = _describe_images  # type: ignore[method-assign]
        Fleets.create_fleet = _create_fleet  # type: ignore[method-assign]
        EC2Response.create_capacity_reservation = capacity_reservations.create_capacity_reservation  # type: ignore[attr-defined]
        EC2Response.describe_capacity_reservations = capacity_reservations.describe_capacity_reservations  # type: ignore[attr-defined]
        EC2Response.create_placement_group = placement_groups.create_placement_group  # type: ignore[attr-defined]
        EC2Response.describe_placement_groups = placement_groups.describe_placement_groups  # type: ignore[attr-defined]
        EC2Response.delete_placement_group = placement_groups.delete_placement_group  # type: ignore[attr-defined]
        SpotInstances.describe_spot_price_history = _describe_spot_price_history  # type: ignore[method-assign,assignment]
