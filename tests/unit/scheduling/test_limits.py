"""NodePool limits that do not throttle scale-up: every pod that fits under a limit is planned in one
solve, and the plan stays within the limit whichever option each claim finally launches as."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

import devstack
from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from apis.manifests import load_documents
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from apis.values.quantity import ResourceList, to_resource_list
from cloudprovider.aws.instancetypes.catalog import load_builtin_catalog
from scheduling import Plan
from tests.unit.scheduling.builders import catalog, node, node_pool, pod, pods, reason, schedule

HOST = "kubernetes.io/hostname"
FAMILY = "karpenter.k8s.aws/instance-family"
DEFAULTS = Path(devstack.__file__).parent / "defaults.yaml"


@cache
def dev_stack_defaults() -> tuple[dict[str, Any], EC2NodeClass, list[InstanceType]]:
    """The local stack's default NodePool (as a document), EC2NodeClass and instance catalog."""
    docs = load_documents(DEFAULTS.read_text(), {"CLUSTER_NAME": "test"}, source=str(DEFAULTS))
    pool = next(d for d in docs if d["kind"] == "NodePool")
    node_class = EC2NodeClass.model_validate(next(d for d in docs if d["kind"] == "EC2NodeClass"))
    return pool, node_class, load_builtin_catalog()


def dev_stack_pool(limits: dict[str, Any] | None = None) -> NodePool:
    """The default NodePool, with other `limits` when given (None keeps its own, cpu 1000)."""
    doc, _, _ = dev_stack_defaults()
    spec = dict(doc["spec"])
    if limits is not None:
        spec["limits"] = limits
    return NodePool.model_validate({**doc, "spec": spec})


def one_pod_nodes(count: int, cpu: str = "500m") -> list[dict[str, Any]]:
    """Pods that each need a node of their own (required anti-affinity on hostname among themselves)."""
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "one"}}}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pods("one", count, cpu=cpu, memory="", labels={"app": "one"}, affinity=anti)


def plan_on_dev_stack(pending: list[dict[str, Any]], pool: NodePool, **kwargs: Any) -> Plan:
    _, node_class, types = dev_stack_defaults()
    return schedule(pending, [pool], node_classes=[node_class], instance_types=types, **kwargs)


def largest_launch(plan: Plan, types: list[InstanceType]) -> ResourceList:
    """What the plan counts against limits if every claim launched its largest remaining option."""
    capacity = {it.name: to_resource_list(it.capacity) for it in types}
    total: ResourceList = {}
    for claim in plan.node_claims:
        for name in {n for t in claim.instance_types for n in capacity[t]}:
            total[name] = total.get(name, 0) + max(capacity[t].get(name, 0) for t in claim.instance_types)
    return total


def test_eighty_one_pod_nodes_under_a_1000_cpu_limit_are_planned_in_one_solve() -> None:
    pool = dev_stack_pool()
    assert to_resource_list(pool.spec.limits) == {"cpu": 1000 * 1000}
    plan = plan_on_dev_stack(one_pod_nodes(80), pool)
    assert not plan.unschedulable
    assert len(plan.node_claims) == 80 and all(len(c.pods) == 1 for c in plan.node_claims)
    _, _, types = dev_stack_defaults()
    assert largest_launch(plan, types)["cpu"] <= 1000 * 1000


def test_no_claim_can_launch_past_the_limit_and_each_keeps_its_cheapest_option() -> None:
    _, _, types = dev_stack_defaults()
    unlimited = plan_on_dev_stack(one_pod_nodes(80), dev_stack_pool({}))
    assert largest_launch(unlimited, types)["cpu"] > 100 * 1000  # a 100-cpu limit binds
    plan = plan_on_dev_stack(one_pod_nodes(80), dev_stack_pool({"cpu": 100}))
    assert len(plan.node_claims) == 80 and not plan.unschedulable
    # every claim may still launch its largest remaining option, together within the limit, which
    # leaves no room to spare: 1-vCPU types for all, 2-vCPU ones too for the 20 that fit
    assert largest_launch(plan, types)["cpu"] == 100 * 1000
    for before, after in zip(unlimited.node_claims, plan.node_claims, strict=True):
        assert after.instance_types[0] == before.instance_types[0] and after.price == before.price


def test_trimming_drops_the_largest_options_first_and_only_as_far_as_needed() -> None:
    cpu = {it.name: to_resource_list(it.capacity)["cpu"] for it in catalog()}
    unlimited = schedule(one_pod_nodes(10, cpu="1"))
    plan = schedule(one_pod_nodes(10, cpu="1"), [node_pool(limits={"cpu": "40"})])
    assert len(plan.node_claims) == 10
    for before, after in zip(unlimited.node_claims, plan.node_claims, strict=True):
        # 10 claims of up to 16 vCPU would be 160; of up to 4 vCPU, exactly 40
        assert set(after.instance_types) == {t for t in before.instance_types if cpu[t] <= 4000}
        assert after.instance_types[0] == before.instance_types[0]


def test_limits_that_do_not_bind_trim_nothing() -> None:
    unlimited = plan_on_dev_stack(one_pod_nodes(20), dev_stack_pool({}))
    roomy = plan_on_dev_stack(one_pod_nodes(20), dev_stack_pool({"cpu": 100_000}))
    assert roomy.model_dump_json() == unlimited.model_dump_json()


def test_a_limit_too_small_for_all_pods_plans_as_many_as_fit_and_reports_the_rest() -> None:
    plan = plan_on_dev_stack(one_pod_nodes(80), dev_stack_pool({"cpu": 20}))
    _, _, types = dev_stack_defaults()
    assert len(plan.node_claims) == 20  # each on a 1-vCPU type, the smallest that holds 500m
    assert largest_launch(plan, types)["cpu"] <= 20 * 1000
    assert len(plan.unschedulable) == 60
    assert "NodePool default: limits would be exceeded by every instance type (remaining cpu=0)" in (
        plan.unschedulable[0].reason
    )


def test_existing_nodes_and_claims_in_flight_count_as_before() -> None:
    existing = node("n1", cpu="900", memory="1000Gi", labels={"karpenter.sh/nodepool": "default"})
    in_flight = NodeClaim.model_validate(
        {
            "metadata": {"name": "default-abc", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.2xlarge", "m5.large"]}
                ],
            },
        }
    )
    # 900 on the node, 8 reserved by the claim (its largest option): 92 left for one-vCPU floors
    plan = plan_on_dev_stack(one_pod_nodes(120, cpu="600m"), dev_stack_pool(), nodes=[existing],
                             node_claims=[in_flight])  # fmt: skip
    _, _, types = dev_stack_defaults()
    placed_new = sum(len(c.pods) for c in plan.node_claims)
    assert placed_new == 92 and len(plan.unschedulable) == 120 - 92 - 2
    assert largest_launch(plan, types)["cpu"] <= (1000 - 900 - 8) * 1000


def test_min_values_hold_on_trimmed_claims() -> None:
    pool = node_pool(limits={"cpu": "40"}, requirements=[{"key": FAMILY, "operator": "Exists", "minValues": 3}])
    plan = schedule(one_pod_nodes(10, cpu="1"), [pool])
    assert len(plan.node_claims) == 10 and not plan.unschedulable
    assert largest_launch(plan, catalog())["cpu"] <= 40 * 1000
    for claim in plan.node_claims:
        assert len({t.split(".")[0] for t in claim.instance_types}) >= 3


def test_min_values_that_the_limit_breaks_are_reported() -> None:
    # five families: four with 2-vCPU types, g4dn only at 4 vCPU, which a 3-cpu limit excludes
    pool = node_pool(limits={"cpu": "3"}, requirements=[{"key": FAMILY, "operator": "Exists", "minValues": 5}])
    plan = schedule([pod("p", cpu="500m")], [pool])
    assert not plan.node_claims
    why = reason(plan, "default/p")
    assert "minValues 5 for karpenter.k8s.aws/instance-family cannot be met" in why
    assert "larger instance types would exceed its limits (remaining cpu=3)" in why


@pytest.mark.parametrize(
    "limits",
    [{"cpu": "9"}, {"cpu": "17", "memory": "40Gi"}, {"memory": "100Gi"}, {"cpu": "30", "nodes": "6"}],
)
def test_no_launch_can_exceed_any_limit(limits: dict[str, str]) -> None:
    mixed = one_pod_nodes(12, cpu="700m") + pods("bulk", 40, cpu="300m", memory="1Gi")
    plan = schedule(mixed, [node_pool(limits=limits)])
    assert plan.node_claims
    worst = largest_launch(plan, catalog())
    for name, limit in to_resource_list(limits).items():
        assert (len(plan.node_claims) if name == "nodes" else worst[name]) <= limit
