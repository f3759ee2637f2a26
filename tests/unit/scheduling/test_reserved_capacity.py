"""Reserved offerings in the scheduler: near free, so preferred where the NodePool allows `reserved`."""

from __future__ import annotations

from apis.instancetype import InstanceType, Offering
from tests.unit.scheduling.builders import catalog, node_pool, pods, requirement, schedule

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


def test_a_pool_allowing_reserved_gets_the_reservation() -> None:
    pool = node_pool(requirements=[{"key": CT, "operator": "In", "values": ["reserved", "on-demand"]}])
    plan = schedule(pods("web", 1, cpu="1"), [pool], instance_types=with_reservation())
    claim = plan.node_claims[0]
    assert claim.instance_types[0] == "m5.xlarge"
    assert "reserved" in requirement(claim, CT)
    assert claim.price < 0.001


def test_a_pool_excluding_reserved_or_a_full_reservation_gets_none() -> None:
    pool = node_pool(requirements=[{"key": CT, "operator": "In", "values": ["spot", "on-demand"]}])
    excluded = schedule(pods("web", 1, cpu="1"), [pool], instance_types=with_reservation())
    assert excluded.node_claims[0].instance_types[0] == "c5.large"
    assert "reserved" not in requirement(excluded.node_claims[0], CT)
    allowing = node_pool(requirements=[{"key": CT, "operator": "In", "values": ["reserved", "on-demand"]}])
    full = schedule(pods("web", 1, cpu="1"), [allowing], instance_types=with_reservation(available=False))
    assert requirement(full.node_claims[0], CT) == ["on-demand"]
