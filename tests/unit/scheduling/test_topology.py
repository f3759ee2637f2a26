"""Topology spread, pod affinity and anti-affinity, host ports, volumes, relaxation."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.unit.scheduling.builders import ZONES, node, placement, pod, pods, reason, requirement, schedule

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CT = "karpenter.sh/capacity-type"
APP = {"app": "web"}
SELECTOR = {"matchLabels": APP}


def spread(key: str, skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> list[dict[str, Any]]:
    return [{"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": SELECTOR, **extra}]


def affinity(kind: str, key: str, preferred: bool = False) -> dict[str, Any]:
    term = {"topologyKey": key, "labelSelector": SELECTOR}
    if preferred:
        return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": term}]}}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def claim_zones(plan: Any) -> Counter[str]:
    out: Counter[str] = Counter()
    for claim in plan.node_claims:
        zone = requirement(claim, ZONE)
        assert zone is not None and len(zone) == 1, zone
        out[zone[0]] += len(claim.pods)
    return out


def test_zone_spread_balances_across_zones() -> None:
    plan = schedule(pods("web", 7, labels=APP, topologySpreadConstraints=spread(ZONE)))
    assert sorted(claim_zones(plan).values()) == [2, 2, 3]


def test_zone_spread_counts_running_pods() -> None:
    bound = [pod(f"old-{i}", labels=APP, node_name="n1") for i in range(2)]
    plan = schedule(
        pods("web", 4, labels=APP, topologySpreadConstraints=spread(ZONE)),
        nodes=[node("n1", cpu="1", memory="1Gi")],
        bound_pods=bound,
    )
    assert claim_zones(plan) == Counter({ZONES[1]: 2, ZONES[2]: 2})


def test_min_domains_forces_spreading() -> None:
    spec = spread(ZONE, skew=3, minDomains=3)
    plan = schedule(pods("web", 3, labels=APP, topologySpreadConstraints=spec))
    assert sorted(claim_zones(plan).values()) == [1, 1, 1] or sum(claim_zones(plan).values()) == 3


def test_hostname_spread_puts_max_skew_pods_per_node() -> None:
    plan = schedule(pods("web", 6, labels=APP, topologySpreadConstraints=spread(HOST, skew=2)))
    assert [len(c.pods) for c in plan.node_claims] == [2, 2, 2]


def test_capacity_type_spread() -> None:
    plan = schedule(pods("web", 4, labels=APP, topologySpreadConstraints=spread(CT)))
    types = Counter(requirement(c, CT)[0] for c in plan.node_claims for _ in c.pods)  # type: ignore[index]
    assert types == Counter({"on-demand": 2, "spot": 2})


def test_unknown_topology_key_stays_pending_with_reason() -> None:
    plan = schedule(pods("web", 1, labels=APP, topologySpreadConstraints=spread("example.com/rack")))
    assert "no NodePool or node offers a value" in reason(plan, "default/web-000")


def test_schedule_anyway_spread_is_relaxed_when_unsatisfiable() -> None:
    # rack is unknown: a hard constraint keeps the pod pending, a soft one is dropped
    plan = schedule(
        pods("web", 1, labels=APP, topologySpreadConstraints=spread("example.com/rack", when="ScheduleAnyway"))
    )
    assert len(plan.node_claims) == 1


def test_hostname_anti_affinity_one_pod_per_node() -> None:
    plan = schedule(pods("web", 3, labels=APP, affinity=affinity("podAntiAffinity", HOST)))
    assert [len(c.pods) for c in plan.node_claims] == [1, 1, 1]


def test_anti_affinity_against_running_pods() -> None:
    bound = [pod("old", labels=APP, node_name="n1")]
    plan = schedule([pod("new", labels=APP, affinity=affinity("podAntiAffinity", HOST))],
                    nodes=[node("n1")], bound_pods=bound)  # fmt: skip
    assert placement(plan)["default/new"] == "claim-0"


def test_running_pods_anti_affinity_keeps_matching_pods_away() -> None:
    guard = pod("guard", labels={"role": "guard"}, node_name="n1",
                affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": HOST, "labelSelector": SELECTOR}]}})  # fmt: skip
    plan = schedule([pod("new", labels=APP)], nodes=[node("n1")], bound_pods=[guard])
    assert placement(plan)["default/new"] == "claim-0"
    plan = schedule([pod("other", labels={"app": "x"})], nodes=[node("n1")], bound_pods=[guard])
    assert placement(plan)["default/other"] == "n1"


def test_zone_self_affinity_keeps_the_group_in_one_zone() -> None:
    plan = schedule(pods("web", 30, cpu="1", labels=APP, affinity=affinity("podAffinity", ZONE)))
    assert len(claim_zones(plan)) == 1


def test_zone_affinity_follows_running_pods() -> None:
    bound = [pod("db", labels=APP, node_name="n1")]
    n1 = node("n1", cpu="1", memory="1Gi", labels={ZONE: ZONES[2]})
    plan = schedule([pod("client", cpu="1", affinity=affinity("podAffinity", ZONE))], nodes=[n1], bound_pods=bound)
    assert claim_zones(plan) == Counter({ZONES[2]: 1})


def test_hostname_affinity_without_matches_stays_pending() -> None:
    plan = schedule([pod("client", affinity=affinity("podAffinity", HOST))])
    assert "pod affinity" in reason(plan, "default/client") or "did not fit" in reason(plan, "default/client")


def test_preferred_anti_affinity_relaxed_when_it_cannot_hold() -> None:
    existing = node("n1", labels={ZONE: ZONES[0]})
    bound = [pod("old", labels=APP, node_name="n1")]
    p = pod("new", labels=APP, affinity=affinity("podAntiAffinity", HOST, preferred=True))
    plan = schedule([p], [], nodes=[existing], bound_pods=bound)
    assert placement(plan)["default/new"] == "n1"


def test_host_ports_conflict() -> None:
    port = [{"containerPort": 80, "hostPort": 80}]
    plan = schedule(pods("web", 3, ports=port))
    assert [len(c.pods) for c in plan.node_claims] == [1, 1, 1]


def test_bound_volume_pins_the_zone() -> None:
    pvc = {"metadata": {"name": "data", "namespace": "default"}, "spec": {"volumeName": "pv-1"}}
    pv = {"metadata": {"name": "pv-1"}, "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [ZONES[1]]}]}]}}}}  # fmt: skip
    p = pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    plan = schedule([p], persistent_volume_claims=[pvc], persistent_volumes=[pv])
    assert requirement(plan.node_claims[0], ZONE) == [ZONES[1]]


def test_storage_class_allowed_topologies() -> None:
    sc = {"metadata": {"name": "zonal"}, "volumeBindingMode": "WaitForFirstConsumer",
          "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": [ZONES[2]]}]}]}  # fmt: skip
    pvc = {"metadata": {"name": "data", "namespace": "default"}, "spec": {"storageClassName": "zonal"}}
    p = pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    plan = schedule([p], persistent_volume_claims=[pvc], storage_classes=[sc])
    assert requirement(plan.node_claims[0], ZONE) == [ZONES[2]]


def test_missing_pvc_is_a_reason() -> None:
    p = pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "nope"}}])
    plan = schedule([p])
    assert 'PersistentVolumeClaim "default/nope" not found' in reason(plan, "default/db")


def test_affinity_to_a_workload_scheduled_later_in_the_batch() -> None:
    # the client is larger, so it is tried first, before any db pod exists; it is retried after them
    client = pod("client", cpu="2", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "db"}}}]}})  # fmt: skip
    db = pod("db", cpu="100m", labels={"app": "db"}, nodeSelector={ZONE: ZONES[1]})
    plan = schedule([client, db])
    assert not plan.unschedulable
    assert claim_zones(plan) == Counter({ZONES[1]: 2})


def test_match_label_keys_spread_each_revision_separately() -> None:
    spec = spread(ZONE, matchLabelKeys=["rev"])
    old = [pod(f"old-{i}", labels={**APP, "rev": "1"}, topologySpreadConstraints=spec) for i in range(3)]
    new = [pod(f"new-{i}", labels={**APP, "rev": "2"}, topologySpreadConstraints=spec) for i in range(3)]
    plan = schedule(old + new)
    per_rev: dict[str, Counter[str]] = {"1": Counter(), "2": Counter()}
    for claim in plan.node_claims:
        zone = requirement(claim, ZONE)[0]  # type: ignore[index]
        for p in claim.pods:
            per_rev["1" if "/old-" in p else "2"][zone] += 1
    assert per_rev["1"] == Counter(dict.fromkeys(ZONES, 1)) and per_rev["2"] == Counter(dict.fromkeys(ZONES, 1))


def test_daemonset_host_ports_block_pods_on_new_nodes() -> None:
    ds = {"metadata": {"name": "proxy"}, "spec": {"template": {"spec": {"containers": [
        {"name": "p", "ports": [{"containerPort": 80, "hostPort": 80}]}]}}}}  # fmt: skip
    plan = schedule([pod("web", ports=[{"containerPort": 80, "hostPort": 80}])], daemonsets=[ds])
    assert "a daemonset binds the same host port" in reason(plan, "default/web")


def test_a_spread_without_selector_counts_no_pods() -> None:
    no_selector = [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}]
    plan = schedule(pods("web", 4, labels=APP, topologySpreadConstraints=no_selector))
    assert len(plan.node_claims) == 1


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_anti_affinity_to_the_namespaces_a_namespace_selector_picks() -> None:
    """A running pod in a namespace the term's namespaceSelector picks keeps the new pod off its node; one
    in a namespace it does not pick does not (before, the selector was read as the pod's own namespace)."""
    term = {"topologyKey": HOST, "labelSelector": SELECTOR, "namespaceSelector": {"matchLabels": {"team": "a"}}}
    new = pod("new", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    namespaces = [namespace("default"), namespace("team-a", team="a"), namespace("team-b", team="b")]
    in_a = pod("web", namespace="team-a", labels=APP, node_name="n1")
    plan = schedule([new], nodes=[node("n1")], bound_pods=[in_a], namespaces=namespaces)
    assert placement(plan)["default/new"] == "claim-0"
    in_b = pod("web", namespace="team-b", labels=APP, node_name="n1")
    plan = schedule([new], nodes=[node("n1")], bound_pods=[in_b], namespaces=namespaces)
    assert placement(plan)["default/new"] == "n1"


def test_affinity_by_the_namespace_name_label_finds_pods_in_another_namespace() -> None:
    name_label = {"matchLabels": {"kubernetes.io/metadata.name": "data"}}
    term = {"topologyKey": HOST, "labelSelector": SELECTOR, "namespaceSelector": name_label}
    client = pod("client", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    db = pod("db", namespace="data", labels=APP, node_name="n1")
    plan = schedule([client], nodes=[node("n1")], bound_pods=[db], namespaces=[namespace("data")])
    assert placement(plan)["default/client"] == "n1"
