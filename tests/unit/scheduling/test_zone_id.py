"""The zone id (topology.k8s.aws/zone-id) is an offering key: the node class's subnets give each zone its id,
and a pod or NodePool requiring one gets a claim in that zone."""

from __future__ import annotations

from collections import Counter

from apis.ec2nodeclass import EC2NodeClass
from tests.unit.scheduling.builders import ZONES, node_class, node_pool, pod, pods, requirement, schedule

ZONE = "topology.kubernetes.io/zone"
ZONE_ID = "topology.k8s.aws/zone-id"
IDS = {ZONES[0]: "usw2-az2", ZONES[1]: "usw2-az1", ZONES[2]: "usw2-az3"}


def resolved_node_class() -> EC2NodeClass:
    nc = node_class()
    subnets = [{"id": f"subnet-{n}", "zone": z, "zoneID": IDS[z]} for n, z in enumerate(ZONES)]
    return nc.model_copy(update={"status": nc.status.model_validate({"subnets": subnets})})


def test_a_pod_requiring_a_zone_id_gets_a_claim_in_that_zone() -> None:
    plan = schedule([pod("web", nodeSelector={ZONE_ID: "usw2-az1"})], node_classes=[resolved_node_class()])
    assert len(plan.node_claims) == 1
    assert requirement(plan.node_claims[0], ZONE) == [ZONES[1]]
    assert requirement(plan.node_claims[0], ZONE_ID) == ["usw2-az1"]


def test_a_node_pool_requiring_zone_ids_limits_its_zones() -> None:
    pool = node_pool(requirements=[{"key": ZONE_ID, "operator": "In", "values": ["usw2-az2", "usw2-az3"]}])
    plan = schedule([pod("web")], [pool], node_classes=[resolved_node_class()])
    assert sorted(requirement(plan.node_claims[0], ZONE) or []) == [ZONES[0], ZONES[2]]


def test_an_unknown_zone_id_schedules_nothing() -> None:
    plan = schedule([pod("web", nodeSelector={ZONE_ID: "usw2-az9"})], node_classes=[resolved_node_class()])
    assert plan.node_claims == []
    without_ids = schedule([pod("web", nodeSelector={ZONE_ID: "usw2-az1"})])
    assert without_ids.node_claims == []  # the node class has not resolved its subnets' zone ids


def test_zone_id_spread_balances_across_zone_ids() -> None:
    app = {"app": "web"}
    spread = [{"maxSkew": 1, "topologyKey": ZONE_ID, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": app}}]  # fmt: skip
    plan = schedule(pods("web", 6, labels=app, topologySpreadConstraints=spread), node_classes=[resolved_node_class()])
    per_zone: Counter[str] = Counter()
    for claim in plan.node_claims:
        zone = requirement(claim, ZONE)
        assert zone is not None and len(zone) == 1, zone
        per_zone[zone[0]] += len(claim.pods)
    assert sorted(per_zone.values()) == [2, 2, 2]
