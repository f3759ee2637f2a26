"""Capacity reservations: selector terms to DescribeCapacityReservations queries, the in-memory counts,
reserved offerings, the launch template that targets a reservation, the instance and its labels, the
node class status."""

from __future__ import annotations

import datetime as dt
from typing import Any

from botocore.exceptions import ClientError

from activities.nodeclaim.translate import launched_labels
from activities.provisioning.nodeclass_status import desired_status
from apis import labels
from apis.ec2nodeclass import CapacityReservationSelectorTerm, EC2NodeClassStatus
from apis.instancetype import InstanceType, Offering
from cloudprovider.aws.instances import to_instance
from cloudprovider.aws.launch.create import Override, choose_capacity_type, one_reservation_type
from cloudprovider.aws.launch.launchtemplate import LaunchTemplateSpec
from cloudprovider.aws.nodeclass.capacityreservations import (
    RESERVED_PRICE_DIVISOR,
    CapacityReservations,
    reservation_query,
    to_reservation,
    with_reserved_offerings,
)
from cloudprovider.aws.nodeclass.resolve import ResolvedAMI
from cloudprovider.types import CapacityReservation, ResolvedNodeClass
from tests.unit.cloudprovider.builders import node_class

NOW = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)
AMI = ResolvedAMI("ami-x86", "al2023-x86_64-standard", "x86_64", "standard")


def api_reservation(rid: str = "cr-1", available: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "CapacityReservationId": rid,
        "OwnerId": "123456789012",
        "InstanceType": "m5.large",
        "AvailabilityZone": "us-west-2a",
        "InstanceMatchCriteria": "targeted",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": available,
        "State": "active",
        **extra,
    }


class FakeEC2:
    """Answers DescribeCapacityReservations with `reservations` (cr-gone: not found) and records the calls."""

    def __init__(self, *reservations: dict[str, Any]) -> None:
        self.reservations = list(reservations)
        self.calls: list[dict[str, Any]] = []

    def describe_capacity_reservations(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if kwargs.get("CapacityReservationIds") == ["cr-gone"]:
            raise ClientError({"Error": {"Code": "InvalidCapacityReservationId.NotFound"}}, "Describe")
        return {"CapacityReservations": self.reservations}


def test_terms_become_queries_for_active_reservations() -> None:
    by_id = CapacityReservationSelectorTerm(id="cr-0123")
    assert reservation_query(by_id) == {
        "CapacityReservationIds": ["cr-0123"],
        "Filters": [{"Name": "state", "Values": ["active"]}],
    }
    by_fields = CapacityReservationSelectorTerm.model_validate(
        {"tags": {"team": "ml", "any": "*"}, "ownerID": "123456789012", "instanceMatchCriteria": "open"}
    )
    assert reservation_query(by_fields)["Filters"] == [
        {"Name": "tag-key", "Values": ["any"]},
        {"Name": "tag:team", "Values": ["ml"]},
        {"Name": "state", "Values": ["active"]},
        {"Name": "owner-id", "Values": ["123456789012"]},
        {"Name": "instance-match-criteria", "Values": ["open"]},
    ]


def test_a_capacity_block_near_its_end_is_expiring() -> None:
    block = api_reservation(ReservationType="capacity-block", EndDate=NOW + dt.timedelta(minutes=20))
    reservation = to_reservation(block, NOW)
    assert (reservation.reservation_type, reservation.state, reservation.end_time) == (
        "capacity-block", "expiring", "2026-11-24T12:20:00Z"
    )  # fmt: skip
    later = to_reservation({**block, "EndDate": NOW + dt.timedelta(hours=2)}, NOW)
    assert later.state == "active"
    plain = to_reservation(api_reservation(), NOW)
    assert (plain.reservation_type, plain.state, plain.end_time, plain.available) == ("default", "active", "", 2)


def test_counts_refresh_after_the_ttl_and_follow_launches_and_refusals_in_between() -> None:
    ec2 = FakeEC2(api_reservation("cr-1", available=2))
    now = [0.0]
    reservations = CapacityReservations(ec2, clock=lambda: now[0], ttl=60.0, now=lambda: NOW)
    with_terms = node_class(capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}])
    assert [r.available for r in reservations.selected(with_terms)] == [2]
    reservations.consume("cr-1")
    assert [r.available for r in reservations.selected(with_terms)] == [1]
    reservations.exhaust("cr-1")
    assert [r.available for r in reservations.selected(with_terms)] == [0]
    assert len(ec2.calls) == 1
    now[0] = 61.0
    assert [r.available for r in reservations.selected(with_terms)] == [2]  # EC2's count again
    assert len(ec2.calls) == 2
    assert reservations.selected(node_class()) == []  # no terms: no call
    assert len(ec2.calls) == 2


def test_an_id_term_that_matches_nothing_selects_nothing() -> None:
    reservations = CapacityReservations(FakeEC2(), clock=lambda: 0.0)
    assert reservations.selected(node_class(capacityReservationSelectorTerms=[{"id": "cr-gone"}])) == []


def reservation(rid: str, zone: str = "us-west-2a", available: int = 1, **extra: Any) -> CapacityReservation:
    fields: dict[str, Any] = {
        "id": rid,
        "instance_type": "m5.large",
        "zone": zone,
        "owner_id": "123456789012",
        "instance_match_criteria": "targeted",
        "available": available,
        **extra,
    }
    return CapacityReservation(**fields)


def test_reserved_offerings_are_near_free_per_reservation_in_offered_zones() -> None:
    m5 = InstanceType(
        name="m5.large",
        capacity={"cpu": "2", "memory": "8Gi"},
        offerings=[
            Offering(zone="us-west-2a", capacity_type="on-demand", price=0.096),
            Offering(zone="us-west-2a", capacity_type="spot", price=0.03),
        ],
    )
    c5 = InstanceType(name="c5.large", capacity={"cpu": "2", "memory": "4Gi"}, offerings=m5.offerings)
    reservations = [
        reservation("cr-1"),
        reservation("cr-2", available=0),
        reservation("cr-3", reservation_type="capacity-block", state="expiring"),
        reservation("cr-elsewhere", zone="us-west-2c"),  # not a zone of the node class
    ]
    m5_out, c5_out = with_reserved_offerings([m5, c5], reservations)
    assert c5_out == c5
    reserved = [o for o in m5_out.offerings if o.capacity_type == "reserved"]
    assert [(o.reservation_id, o.reservation_type, o.available) for o in reserved] == [
        ("cr-1", "default", True),
        ("cr-2", "default", False),  # full
        ("cr-3", "capacity-block", False),  # expiring
    ]
    assert {o.price for o in reserved} == {0.096 / RESERVED_PRICE_DIVISOR}
    assert reserved[0].to_kube()["reservationID"] == "cr-1"


def test_reserved_is_chosen_first_when_allowed_and_one_fleet_buys_one_reservation_type() -> None:
    reserved = [
        Override("m5.large", "subnet-1", "us-west-2a", 1e-8, AMI, "cr-1", "capacity-block"),
        Override("m5.xlarge", "subnet-1", "us-west-2a", 2e-8, AMI, "cr-2", "default"),
        Override("m5.2xlarge", "subnet-1", "us-west-2a", 4e-8, AMI, "cr-3", "capacity-block"),
    ]
    on_demand = [Override("m5.large", "subnet-1", "us-west-2a", 0.096, AMI)]
    candidates = {"reserved": reserved, "on-demand": on_demand, "spot": on_demand}
    assert choose_capacity_type(["reserved", "spot", "on-demand"], candidates) == "reserved"
    assert choose_capacity_type(["spot", "on-demand"], candidates) == "spot"  # the NodePool excludes reserved
    assert choose_capacity_type(["reserved", "on-demand"], {"on-demand": on_demand}) == "on-demand"
    assert [ov.reservation_id for ov in one_reservation_type(reserved)] == ["cr-1", "cr-3"]


def test_a_launch_template_targets_its_reservation_and_buys_a_capacity_block_as_one() -> None:
    def spec(reservation_id: str = "", reservation_type: str = "") -> LaunchTemplateSpec:
        return LaunchTemplateSpec(
            "ami-1", "ud", ("sg-1",), "profile", node_class(), "AL2023", (), reservation_id, reservation_type
        )

    plain, odcr, block = spec(), spec("cr-1", "default"), spec("cr-2", "capacity-block")
    assert "CapacityReservationSpecification" not in plain.data()
    assert odcr.data()["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-1"}
    }
    assert "InstanceMarketOptions" not in odcr.data()
    assert block.data()["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert len({plain.name(), odcr.name(), block.name()}) == 3


def test_an_instance_in_a_reservation_is_reserved_and_labelled_with_it() -> None:
    base = {"InstanceId": "i-1", "InstanceType": "m5.large", "Placement": {"AvailabilityZone": "us-west-2a"}}
    odcr = to_instance({**base, "CapacityReservationId": "cr-1"})
    block = to_instance({**base, "CapacityReservationId": "cr-2", "InstanceLifecycle": "capacity-block"})
    plain = to_instance(base)
    assert (odcr.capacity_type, odcr.capacity_reservation_id, odcr.capacity_reservation_type) == (
        "reserved", "cr-1", "default"
    )  # fmt: skip
    assert (block.capacity_type, block.capacity_reservation_type) == ("reserved", "capacity-block")
    assert (plain.capacity_type, plain.capacity_reservation_id) == ("on-demand", "")
    out = launched_labels(block, {})
    assert (out[labels.CAPACITY_TYPE], out[labels.CAPACITY_RESERVATION_ID], out[labels.CAPACITY_RESERVATION_TYPE]) == (
        "reserved", "cr-2", "capacity-block"
    )  # fmt: skip
    assert labels.CAPACITY_RESERVATION_ID not in launched_labels(plain, {})


def test_status_lists_the_reservations_and_none_keeps_the_node_class_ready() -> None:
    resolved = ResolvedNodeClass(
        subnets=[{"id": "subnet-1", "zone": "us-west-2a"}],
        security_groups=[{"id": "sg-1"}],
        capacity_reservations=[reservation("cr-1", reservation_type="capacity-block", end_time="2026-11-25T00:00:00Z")],
    )
    status = desired_status({}, resolved, "", "2026-11-24T12:00:00Z", generation=1)
    assert status["capacityReservations"] == [
        {
            "id": "cr-1",
            "instanceType": "m5.large",
            "availabilityZone": "us-west-2a",
            "ownerID": "123456789012",
            "instanceMatchCriteria": "targeted",
            "reservationType": "capacity-block",
            "state": "active",
            "endTime": "2026-11-25T00:00:00Z",
        }
    ]
    EC2NodeClassStatus.model_validate(status)
    empty = desired_status({}, resolved.model_copy(update={"capacity_reservations": []}), "", "now", generation=1)
    assert empty["capacityReservations"] == []
    assert {c["status"] for c in empty["conditions"]} == {"True"}
    assert "Ready" in {c["type"] for c in empty["conditions"]}
