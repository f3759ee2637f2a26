"""What a consolidation move may count on, as in Karpenter's simulation: a moved pod may only go to a node
ready to take it now."""

from __future__ import annotations

from typing import Any

from apis.nodeclaim import NodeClaim
from scheduling.disruption import Decision, DisruptionInput, decide
from scheduling.types import SchedulingInput
from tests.unit.scheduling.builders import catalog, node_class
from tests.unit.scheduling.disruption_builders import (
    HOUR_AGO,
    NOW,
    Obj,
    bound,
    budget_pool,
    karpenter_node,
    run,
    stamp,
)


def in_flight(name: str, instance_type: str) -> NodeClaim:
    """A NodeClaim launched an hour ago whose Node has not registered."""
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {"karpenter.sh/nodepool": "default"},
                "creationTimestamp": stamp(HOUR_AGO),
            },
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [instance_type]}
                ],
            },
            "status": {"providerID": f"aws:///us-west-2a/i-{name}"},
        }
    )


def two_nodes(**small: Any) -> tuple[list[tuple[Obj, NodeClaim]], list[Obj]]:
    """`small`, an m5.large running a 1-cpu pod, and `busy`, an m5.xlarge with 2.5 cpu requested (1.5 free)
    and no candidate itself: deleting `small` moves its pod to `busy`."""
    busy = karpenter_node("busy", "m5.xlarge", node_annotations={"karpenter.sh/do-not-disrupt": "true"})
    machines = [karpenter_node("small", "m5.large", **small), busy]
    return machines, [bound("a", "small", cpu="1"), bound("b", "busy", cpu="2500m")]


def test_a_candidate_whose_pods_fit_elsewhere_is_deleted() -> None:
    machines, pods = two_nodes()
    command = run(machines, pods, pools=[budget_pool()]).command
    assert command is not None and (command.action, [c.node for c in command.candidates]) == ("Delete", ["small"])


def test_a_pod_may_not_move_to_a_node_claim_in_flight() -> None:
    machines = [karpenter_node("small", "m5.large")]
    pods = [bound("a", "small", cpu="1")]
    alone = run(machines, pods, pools=[budget_pool()]).command
    assert alone is not None and alone.action == "Replace", "alone, it is replaced by a cheaper node"
    decision = run_with_claims(machines, [in_flight("coming", "m5.xlarge")], pods)
    [why] = [r for r in decision.why("small") if r.method == "SingleNodeConsolidation"]
    assert why.code == "Unschedulable"
    assert "it would move to coming, a NodeClaim in flight" in why.message


def test_a_pod_may_not_move_to_a_node_not_initialized() -> None:
    machines = [karpenter_node("small", "m5.large"), karpenter_node("young", "m5.xlarge", initialized=False)]
    decision = run(machines, [bound("a", "small", cpu="1")], pools=[budget_pool()])
    [why] = [r for r in decision.why("small") if r.method == "SingleNodeConsolidation"]
    assert "it would move to young, a node not initialized or not Ready" in why.message


def run_with_claims(machines: list[tuple[Obj, NodeClaim]], claims: list[NodeClaim], pods: list[Obj]) -> Decision:
    """`run`, with NodeClaims that have no Node yet."""
    cluster = SchedulingInput(
        bound_pods=pods,
        nodes=[n for n, _ in machines],
        node_claims=[c for _, c in machines] + claims,
        node_pools=[budget_pool()],
        node_classes=[node_class()],
        instance_types=catalog(),
    )
    return decide(DisruptionInput(cluster=cluster, now=NOW))
