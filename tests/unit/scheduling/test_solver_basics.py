"""Resources, node selection, taints, NodePools, limits, offerings, existing capacity, determinism."""

from __future__ import annotations

from typing import Any

from apis.ec2nodeclass import EC2NodeClass
from tests.unit.scheduling.builders import (
    catalog,
    instance_type,
    node,
    node_class,
    node_pool,
    placement,
    pod,
    pods,
    reason,
    requirement,
    schedule,
)

ARCH = "kubernetes.io/arch"
ZONE = "topology.kubernetes.io/zone"
CT = "karpenter.sh/capacity-type"
OD = [{"key": CT, "operator": "In", "values": ["on-demand"]}]


def test_packs_pods_onto_the_cheapest_instance_type_that_fits() -> None:
    plan = schedule(pods("web", 3, cpu="1", memory="1Gi"), [node_pool(requirements=OD)])
    assert len(plan.node_claims) == 1
    claim = plan.node_claims[0]
    assert claim.instance_types[0] == "c5.xlarge"  # 3 cpu + 3Gi: c5.large is too small
    assert claim.price == 0.17
    assert claim.instance_types == sorted(claim.instance_types, key=lambda n: claim.instance_types.index(n))
    assert requirement(claim, CT) == ["on-demand"]


def test_spot_is_cheaper_when_the_pool_allows_it() -> None:
    plan = schedule(pods("web", 1, cpu="1"))
    assert plan.node_claims[0].price == round(0.0425 * 2 * 0.4, 5)


def test_pods_that_fit_nowhere_say_why() -> None:
    plan = schedule([pod("huge", cpu="100")])
    assert "no instance type has room: cpu: the pod requests 100, the largest allowed instance type has 16 free" in (
        reason(plan, "default/huge")
    )
    plan = schedule([pod("gpu", requests={"example.com/fpga": "1"})])
    assert "no allowed instance type offers example.com/fpga" in reason(plan, "default/gpu")


def test_extended_resources_select_gpu_types() -> None:
    plan = schedule([pod("train", requests={"nvidia.com/gpu": "1"})])
    assert plan.node_claims[0].instance_types == ["g4dn.xlarge"]


CASES_SELECTION: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    # (description, pod kwargs, pool kwargs, expected instance type or reason fragment)
    ("nodeSelector on arch", {"nodeSelector": {ARCH: "arm64"}}, {}, "m6g.large"),
    (
        "required affinity In instance family",
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["r5"]}]}
        ]}}}},
        {},
        "r5.large",
    ),
    (
        "Gt on instance cpu",
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["8"]}]}
        ]}}}},
        {},
        "c5.4xlarge",
    ),
    ("custom label from the pool", {"nodeSelector": {"team": "a"}}, {"labels": {"team": "a"}}, "c5.large"),
    ("custom label the pool lacks", {"nodeSelector": {"team": "a"}}, {}, 'label "team" is not defined by NodePool'),
    ("pool label mismatch", {"nodeSelector": {"team": "b"}}, {"labels": {"team": "a"}}, 'requirement "team"'),
    ("restricted hostname", {"nodeSelector": {"kubernetes.io/hostname": "x"}}, {}, "is restricted"),
    ("untolerated taint", {}, {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}, "does not tolerate taint gpu"),
    (
        "tolerated taint",
        {"tolerations": [{"key": "gpu", "operator": "Exists"}]},
        {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        "c5.large",
    ),
    ("pool requirement", {}, {"requirements": [{"key": "karpenter.k8s.aws/instance-category", "operator": "In",
                                                 "values": ["m"]}]}, "m5.large"),
]  # fmt: skip


def test_node_selection_table() -> None:
    for description, pod_kwargs, pool_kwargs, expected in CASES_SELECTION:
        plan = schedule([pod("p", **pod_kwargs)], [node_pool(**pool_kwargs)])
        if plan.node_claims:
            assert plan.node_claims[0].instance_types[0] == expected, description
        else:
            assert expected in reason(plan, "default/p"), (description, plan.unschedulable)


def test_required_terms_are_ored_first_unsatisfiable_term_relaxed() -> None:
    terms = [
        {"matchExpressions": [{"key": ARCH, "operator": "In", "values": ["s390x"]}]},
        {"matchExpressions": [{"key": ARCH, "operator": "In", "values": ["arm64"]}]},
    ]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    plan = schedule([pod("p", affinity=affinity)])
    assert plan.node_claims[0].instance_types == ["m6g.large"]


def test_preferred_node_affinity_is_honoured_then_relaxed_heaviest_first() -> None:
    def pref(weight: int, family: str) -> dict[str, object]:
        key = "karpenter.k8s.aws/instance-family"
        return {
            "weight": weight,
            "preference": {"matchExpressions": [{"key": key, "operator": "In", "values": [family]}]},
        }

    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(10, "r5"), pref(50, "x9")]}}
    plan = schedule([pod("p", affinity=affinity)])
    assert plan.node_claims[0].instance_types == ["r5.large", "r5.xlarge", "r5.2xlarge", "r5.4xlarge"]


def test_the_ignore_preference_policy_drops_preferences_up_front() -> None:
    family = "karpenter.k8s.aws/instance-family"
    preferred = [
        {"weight": 10, "preference": {"matchExpressions": [{"key": family, "operator": "In", "values": ["r5"]}]}}
    ]
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": {"app": "web"}}}]  # fmt: skip
    web = [pod(f"w{i}", labels={"app": "web"}, affinity=affinity, topologySpreadConstraints=spread) for i in range(3)]
    respected = schedule(web, [node_pool(requirements=OD)])
    assert len(respected.node_claims) == 3, "one node per zone, of the preferred family"
    assert {c.instance_types[0] for c in respected.node_claims} == {"r5.large"}
    ignored = schedule(web, [node_pool(requirements=OD)], preference_policy="Ignore")
    [claim] = ignored.node_claims
    assert len(claim.pods) == 3 and claim.instance_types[0] == "c5.large", "the cheapest node for all three"


def test_prefer_no_schedule_is_avoided_until_relaxed() -> None:
    tainted = node_pool("tainted", weight=50, taints=[{"key": "soft", "effect": "PreferNoSchedule"}])
    other = node_pool("other", requirements=OD)
    plan = schedule([pod("p")], [tainted, other])
    assert plan.node_claims[0].node_pool == "other"
    plan = schedule([pod("p")], [tainted])
    assert plan.node_claims[0].node_pool == "tainted"


def test_pools_are_tried_by_weight_and_not_ready_pools_skipped() -> None:
    heavy = node_pool("heavy", weight=10)
    light = node_pool("light")
    assert schedule([pod("p")], [light, heavy]).node_claims[0].node_pool == "heavy"
    broken = node_pool(
        "heavy", weight=10, status={"conditions": [{"type": "Ready", "status": "False", "reason": "NodeClassNotReady",
                                                    "lastTransitionTime": "2024-01-01T00:00:00Z", "message": "x"}]}
    )  # fmt: skip
    assert schedule([pod("p")], [light, broken]).node_claims[0].node_pool == "light"
    plan = schedule([pod("p")], [broken])
    assert reason(plan, "default/p") == "no ready NodePool (heavy: x)"


def test_a_pod_says_which_pools_exist_and_why_none_is_ready() -> None:
    def not_ready(name: str, message: str) -> Any:
        condition = {"type": "Ready", "status": "False", "reason": "NodeClassNotReady", "message": message,
                     "lastTransitionTime": "2024-01-01T00:00:00Z"}  # fmt: skip
        return node_pool(name, status={"conditions": [condition]})

    a = not_ready("a", 'EC2NodeClass "a" is not ready: no subnet matches')
    b = not_ready("b", 'EC2NodeClass "b" not found')
    assert reason(schedule([pod("p")], [a, b]), "default/p") == (
        'no ready NodePool (a: EC2NodeClass "a" is not ready: no subnet matches; b: EC2NodeClass "b" not found)'
    )
    # with a ready pool beside them, each unready one is named as before
    mixed = reason(schedule([pod("p", cpu="1000")], [a, node_pool("c")]), "default/p")
    assert "NodePool a: not ready (NodeClassNotReady: " in mixed and "no ready NodePool" not in mixed
    assert reason(schedule([pod("p")], []), "default/p") == "no NodePool exists"


def test_limits_are_never_exceeded() -> None:
    limited = node_pool(limits={"cpu": "8"})
    plan = schedule(pods("web", 20, cpu="1"), [limited])
    launched_cpu = sum(int(c.requests["cpu"].rstrip("m")) / (1000 if "m" in c.requests["cpu"] else 1)
                       for c in plan.node_claims)  # fmt: skip
    assert launched_cpu <= 8
    assert plan.unschedulable
    assert "limits would be exceeded" in plan.unschedulable[0].reason


def test_nodes_limit_counts_existing_nodes() -> None:
    existing = node("n1", cpu="1", labels={"karpenter.sh/nodepool": "default"})
    plan = schedule(pods("web", 3, cpu="1"), [node_pool(limits={"nodes": "2"})], nodes=[existing])
    assert len(plan.node_claims) == 1


def test_unavailable_offerings_are_excluded() -> None:
    its = [instance_type("m5.large", 2, 8, 0.096, spot=False, unavailable=("us-west-2a", "us-west-2b"))]
    plan = schedule([pod("p")], instance_types=its)
    assert requirement(plan.node_claims[0], ZONE) == ["us-west-2c"]


def test_on_demand_pool_ignores_spot_prices() -> None:
    plan = schedule([pod("p")], [node_pool(requirements=OD)])
    assert plan.node_claims[0].price == 0.085


def test_existing_nodes_are_filled_first() -> None:
    plan = schedule(pods("web", 5, cpu="1"), nodes=[node("n1", cpu="3")])
    where = placement(plan)
    assert sum(1 for w in where.values() if w == "n1") == 3
    assert len(plan.node_claims) == 1


def test_bound_pods_use_existing_capacity() -> None:
    bound = [pod("old", cpu="2500m", node_name="n1")]
    plan = schedule([pod("new", cpu="1")], nodes=[node("n1", cpu="3")], bound_pods=bound)
    assert placement(plan)["default/new"] == "claim-0"


def test_existing_node_taints_and_labels_are_honoured() -> None:
    tainted = node("n1", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    assert placement(schedule([pod("p")], nodes=[tainted]))["default/p"] == "claim-0"
    labelled = node("n2", labels={"team": "a"})
    assert placement(schedule([pod("p", nodeSelector={"team": "a"})], nodes=[labelled]))["default/p"] == "n2"


def test_daemonset_overhead_counts_only_daemonsets_that_run_on_the_pool() -> None:
    ds = {
        "metadata": {"name": "agent"},
        "spec": {"template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}},
    }
    arm_only = {
        "metadata": {"name": "arm"},
        "spec": {"template": {"spec": {"nodeSelector": {"team": "x"},
                                        "containers": [{"resources": {"requests": {"cpu": "5"}}}]}}},
    }  # fmt: skip
    plan = schedule([pod("p", cpu="1500m")], daemonsets=[ds, arm_only])
    claim = plan.node_claims[0]
    assert claim.requests["cpu"] == "2500m"
    assert claim.instance_types[0] == "c5.xlarge"


def test_kubelet_max_pods_limits_pods_per_node() -> None:
    plan = schedule(pods("tiny", 6, cpu="10m", memory="1Mi"), [node_pool(requirements=OD)],
                    node_classes=[node_class(kubelet={"maxPods": 4})])  # fmt: skip
    assert [len(c.pods) for c in plan.node_claims] == [4, 2]


def test_the_plan_is_deterministic() -> None:
    def run() -> str:
        return schedule(pods("a", 30, cpu="700m") + pods("b", 30, cpu="300m", memory="3Gi")).model_dump_json()

    assert run() == run()


def test_every_catalog_type_fits_a_small_pod() -> None:
    assert len(schedule([pod("p")]).node_claims[0].instance_types) == len(catalog())


def test_min_values_keeps_enough_distinct_families_or_explains() -> None:
    family = "karpenter.k8s.aws/instance-family"
    ok = node_pool(requirements=[{"key": family, "operator": "Exists", "minValues": 3}])
    plan = schedule([pod("p")], [ok])
    assert len({name.split(".")[0] for name in plan.node_claims[0].instance_types}) >= 3
    too_many = node_pool(requirements=[{"key": family, "operator": "Exists", "minValues": 9}])
    plan = schedule([pod("p")], [too_many])
    assert "minValues 9 for karpenter.k8s.aws/instance-family cannot be met" in reason(plan, "default/p")


def test_best_effort_min_values_lowers_what_a_new_node_cannot_meet() -> None:
    family = "karpenter.k8s.aws/instance-family"
    too_many = node_pool(requirements=[{"key": family, "operator": "Exists", "minValues": 9}])
    [claim] = schedule([pod("p")], [too_many], min_values_policy="BestEffort").node_claims
    assert claim.min_values_relaxed
    [req] = [r for r in claim.requirements if r.key == family]
    assert req.min_values == len({name.split(".")[0] for name in claim.instance_types}) == 5
    fine = node_pool(requirements=[{"key": family, "operator": "Exists", "minValues": 3}])
    assert not schedule([pod("p")], [fine], min_values_policy="BestEffort").node_claims[0].min_values_relaxed


def test_best_effort_min_values_keeps_a_planned_node_flexible() -> None:
    family = "karpenter.k8s.aws/instance-family"
    pool = node_pool(requirements=[{"key": family, "operator": "Exists", "minValues": 3}])
    r5_only = {"nodeSelector": {family: "r5"}}
    pending = [pod("any"), pod("r5", **r5_only)]
    assert reason(schedule(pending, [pool]), "default/r5").count("minValues 3") == 1, "Strict: it stays pending"
    flexible, relaxed = sorted(schedule(pending, [pool], min_values_policy="BestEffort").node_claims,
                               key=lambda c: c.min_values_relaxed)  # fmt: skip
    assert (flexible.pods, flexible.min_values_relaxed) == (["default/any"], False)
    assert (relaxed.pods, relaxed.min_values_relaxed) == (["default/r5"], True)
    assert {name.split(".")[0] for name in relaxed.instance_types} == {"r5"}


def test_startup_taints_are_ignored_by_the_simulation() -> None:
    pool = node_pool(startupTaints=[{"key": "agent-not-ready", "effect": "NoSchedule"}])
    plan = schedule([pod("p")], [pool])
    assert plan.node_claims and plan.node_claims[0].startup_taints[0].key == "agent-not-ready"


def test_pods_can_pin_a_pool_by_name() -> None:
    heavy, light = node_pool("heavy", weight=10), node_pool("light")
    plan = schedule([pod("p", nodeSelector={"karpenter.sh/nodepool": "light"})], [heavy, light])
    assert plan.node_claims[0].node_pool == "light"


def test_a_pod_too_big_for_the_heavier_pool_goes_to_the_next() -> None:
    small = node_pool("small", weight=50, requirements=[{"key": "karpenter.k8s.aws/instance-size", "operator": "In",
                                                          "values": ["large"]}])  # fmt: skip
    big = node_pool("big")
    plan = schedule([pod("p", cpu="6")], [small, big])
    assert plan.node_claims[0].node_pool == "big"
    plan = schedule([pod("p", cpu="60")], [small, big])
    assert "NodePool small: no instance type has room" in reason(plan, "default/p")
    assert "NodePool big: no instance type has room" in reason(plan, "default/p")


def test_the_plan_does_not_depend_on_input_order() -> None:
    import random

    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "s"}}}]  # fmt: skip
    pending = (
        pods("a", 20, cpu="700m")
        + pods("b", 20, cpu="300m", memory="3Gi")
        + pods("s", 9, labels={"app": "s"}, topologySpreadConstraints=spread)
    )
    nodes = [node("n1", cpu="2"), node("n2", cpu="1")]
    pools = [node_pool("x", weight=5, limits={"cpu": "20"}), node_pool("y")]
    expected = schedule(pending, pools, nodes=nodes).model_dump_json()
    rng = random.Random(7)
    for _ in range(3):
        shuffled, shuffled_nodes, shuffled_pools = list(pending), list(nodes), list(pools)
        rng.shuffle(shuffled)
        rng.shuffle(shuffled_nodes)
        rng.shuffle(shuffled_pools)
        assert schedule(shuffled, shuffled_pools, nodes=shuffled_nodes).model_dump_json() == expected


def test_a_node_class_whose_amis_are_all_x86_is_planned_only_onto_amd64_types() -> None:
    x86_only = [{"id": "ami-x86", "requirements": [{"key": ARCH, "operator": "In", "values": ["amd64"]}]}]
    nc = EC2NodeClass.model_validate({**node_class().to_kube(), "status": {"amis": x86_only}})
    arch_of = {it.name: it.labels.get(ARCH, "amd64") for it in catalog()}
    assert "arm64" in arch_of.values()  # the catalog has both
    plan = schedule([pod("p")], node_classes=[nc])
    assert plan.node_claims and {arch_of[t] for t in plan.node_claims[0].instance_types} == {"amd64"}
    arm = schedule([pod("arm", nodeSelector={ARCH: "arm64"})], node_classes=[nc])
    assert not arm.node_claims
    assert "EC2NodeClass default selects AMIs for amd64 only: add an amiSelectorTerms term for arm64" in reason(
        arm, "default/arm"
    )


def test_a_node_pool_whose_requirements_leave_no_instance_type_is_named() -> None:
    nothing = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["z9.nonexistent"]}]
    plan = schedule([pod("p")], [node_pool("general", requirements=OD), node_pool("impossible", requirements=nothing)])
    assert plan.node_pools_without_types == ["impossible"]
    assert plan.node_claims and plan.node_claims[0].node_pool == "general"
