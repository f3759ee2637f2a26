"""Reserved offerings in the scheduler: near free, so preferred where the NodePool allows `reserved`."""

from __future__ import annotations

from typing import Any

from apis.ec2nodeclass import EC2NodeClass, EC2NodeClassStatus
from apis.instancetype import InstanceType, Offering
from scheduling.types import Plan
from tests.unit.scheduling.builders import catalog, node_class, node_pool, pods, requirement, schedule

CT = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"


def with_reservation(available: bool = True) -> list[InstanceType]:
    """The builders' catalog with one reservation of m5.xlarge in us-west-2b."""
    out = []
    for it in catalog():
        if it.name == "m5.xlarge":
            reserved = Offering(
                zone="us-west-2b", capacity_type="reserved", price=0.192 / 1e7, available=available,
                reservation_id="cr-1", reservation_type="default",
            )  # fmt: skip
            it = it.model_copy(update={"offerings": [*it.offerings, reserved]})
        out.append(it)
    return out


def selecting(reservation_ids: list[str]) -> EC2NodeClass:
    """The default node class with these reservations in its status (what its selector terms matched)."""
    reservations = [
        {"id": rid, "instanceType": "m5.xlarge", "availabilityZone": "us-west-2b", "ownerID": "123456789012",
         "instanceMatchCriteria": "targeted"}
        for rid in reservation_ids
    ]  # fmt: skip
    return node_class().model_copy(update={"status": EC2NodeClassStatus(capacity_reservations=reservations)})


def plan_for(values: list[str], **kwargs: Any) -> Plan:
    pool = node_pool(requirements=[{"key": CT, "operator": "In", "values": values}])
    return schedule(pods("web", 1, cpu="1"), [pool], **kwargs)


def test_a_pool_allowing_reserved_gets_the_reservation() -> None:
    plan = plan_for(["reserved", "on-demand"], instance_types=with_reservation(), node_classes=[selecting(["cr-1"])])
    claim = plan.node_claims[0]
    assert claim.instance_types[0] == "m5.xlarge"
    assert "reserved" in requirement(claim, CT)
    assert claim.price < 0.001


def test_a_pool_excluding_reserved_a_full_reservation_or_another_classs_gets_none() -> None:
    mine = [selecting(["cr-1"])]
    excluded = plan_for(["spot", "on-demand"], instance_types=with_reservation(), node_classes=mine)
    assert excluded.node_claims[0].instance_types[0] == "c5.large"
    assert "reserved" not in requirement(excluded.node_claims[0], CT)
    full = plan_for(["reserved", "on-demand"], instance_types=with_reservation(available=False), node_classes=mine)
    assert requirement(full.node_claims[0], CT) == ["on-demand"]
    others = plan_for(["reserved", "on-demand"], instance_types=with_reservation(), node_classes=[selecting(["cr-2"])])
    assert requirement(others.node_claims[0], CT) == ["on-demand"]
