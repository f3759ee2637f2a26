"""Relaxation order, in-flight NodeClaims, static pools, RuntimeClass overhead, invalid pods."""

from __future__ import annotations

from typing import Any

from apis.nodeclaim import NodeClaim
from scheduling.constraints.requirements import Requirements
from scheduling.provisioning.pods import parse_pod
from tests.unit.scheduling.builders import node, node_pool, placement, pod, reason, schedule

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ARCH = "kubernetes.io/arch"


def _expr(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def test_relaxation_order_matches_karpenter() -> None:
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "a"}}}
    spec = {
        "containers": [{"name": "c"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [_expr(ARCH, "arm64"), _expr(ARCH, "amd64")]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": _expr(ZONE, "a")},
                    {"weight": 9, "preference": _expr(ZONE, "b")},
                ],
            },
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term}]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term}]
            },
        },
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}}
        ],
    }
    variants = parse_pod("default", {}, spec, {}, lambda ns, s: Requirements()).variants
    relaxed = [v.relaxed.split(" ")[0] + (" " + v.relaxed.split(" ")[1] if " " in v.relaxed else "") for v in variants]
    assert relaxed == [
        "",
        "a required",
        "preferred pod",
        "preferred pod",
        "the heaviest",
        "the heaviest",
        "ScheduleAnyway topology",
        "PreferNoSchedule taints",
    ]
    assert "arm64" in repr(variants[0].reqs) and "amd64" in repr(variants[1].reqs)
    assert "In [b]" in repr(variants[0].reqs)  # heaviest preference applies first
    assert "In [a]" in repr(variants[4].reqs)  # then the next heaviest
    assert ZONE not in variants[5].reqs  # then none
    assert [t.kind for t in variants[0].terms] == ["affinity", "anti", "spread"]
    assert variants[-1].ignore_prefer_no_schedule and not variants[-2].ignore_prefer_no_schedule


def test_in_flight_claims_are_filled_before_new_ones() -> None:
    claim = NodeClaim.model_validate(
        {
            "metadata": {"name": "default-abc", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]}
                ],
            },
        }
    )
    plan = schedule([pod("a", cpu="3"), pod("b", cpu="3")], node_claims=[claim])
    assert plan.existing_nodes[0].name == "default-abc" and plan.existing_nodes[0].node_claim
    assert placement(plan)["default/a"] == "default-abc"
    assert placement(plan)["default/b"] == "claim-0"


def _registered_claim(node_name: str, startup_taints: list[dict[str, str]]) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": f"claim-of-{node_name}", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "startupTaints": startup_taints,
            },
            "status": {"nodeName": node_name},
        }
    )


def test_a_starting_node_is_filled_as_if_its_startup_and_ephemeral_taints_were_gone() -> None:
    agent = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoSchedule"}
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    network = {"key": "readiness.k8s.io/NetworkReady", "value": "pending", "effect": "NoSchedule"}  # a readiness rule's
    booting = node("n1", labels={"karpenter.sh/nodepool": "default"}, taints=[agent, not_ready, network])
    claim = _registered_claim("n1", [agent])
    assert placement(schedule([pod("p")], nodes=[booting], node_claims=[claim]))["default/p"] == "n1"
    # Not its startup taint: a taint the NodeClaim did not say goes away keeps pods off.
    other = node("n1", labels={"karpenter.sh/nodepool": "default"}, taints=[agent])
    assert placement(schedule([pod("p")], nodes=[other], node_claims=[_registered_claim("n1", [])]))["default/p"] == (
        "claim-0"
    )


def test_an_initialized_or_unmanaged_node_that_stopped_answering_gets_no_pods() -> None:
    unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}
    gone = node("n1", labels={"karpenter.sh/nodepool": "default", "karpenter.sh/initialized": "true"},
                taints=[unreachable])  # fmt: skip
    assert placement(schedule([pod("p")], nodes=[gone]))["default/p"] == "claim-0"
    unmanaged = node("n2", taints=[unreachable])  # a node of a managed node group
    assert placement(schedule([pod("p")], nodes=[unmanaged]))["default/p"] == "claim-0"


def test_static_pools_do_not_launch_for_pods() -> None:
    plan = schedule([pod("p")], [node_pool(replicas=2)])
    assert "static NodePool" in reason(plan, "default/p")


def test_runtime_class_overhead_is_added() -> None:
    rc = {"metadata": {"name": "kata"}, "handler": "kata", "overhead": {"podFixed": {"cpu": "1"}}}
    plan = schedule([pod("p", cpu="1", runtimeClassName="kata")], runtime_classes=[rc])
    assert plan.node_claims[0].requests["cpu"] == "2"
    plan = schedule([pod("p", runtimeClassName="missing")])
    assert 'RuntimeClass "missing" not found' in reason(plan, "default/p")


def test_invalid_pods_stay_pending_with_the_field_named() -> None:
    plan = schedule([pod("p", cpu="a lot")])
    assert "spec.containers[0].resources.requests.cpu" in reason(plan, "default/p")


def test_node_affinity_policy_ignore_counts_domains_the_pod_cannot_use() -> None:
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "a"}}, "nodeAffinityPolicy": "Ignore"}]  # fmt: skip
    pinned: dict[str, Any] = {"nodeSelector": {ZONE: "us-west-2a"}, "topologySpreadConstraints": spread}
    plan = schedule([pod(f"p{i}", labels={"app": "a"}, **pinned) for i in range(3)])
    # zones b and c count as empty domains: only one pod fits in zone a within maxSkew 1
    assert sum(len(c.pods) for c in plan.node_claims) == 1
    assert len(plan.unschedulable) == 2


def test_in_flight_claims_count_against_limits() -> None:
    claim = NodeClaim.model_validate(
        {
            "metadata": {"name": "default-abc", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c5.xlarge"]}
                ],
            },
        }
    )
    plan = schedule([pod("a", cpu="3"), pod("b", cpu="3")], [node_pool(limits={"cpu": "6"})], node_claims=[claim])
    assert placement(plan)["default/a"] == "default-abc"
    assert "would exceed its limits (remaining cpu=2)" in reason(plan, "default/b")


def test_limits_that_leave_only_small_types_are_named() -> None:
    plan = schedule([pod("p", cpu="3")], [node_pool(limits={"cpu": "2"})])
    assert "larger instance types would exceed its limits (remaining cpu=2)" in reason(plan, "default/p")
