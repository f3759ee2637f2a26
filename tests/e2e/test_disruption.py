"""Disruption on a stack of the module's own, observed through the Kubernetes API and EC2 only.

1. Chaos during a consolidation (it kills the worker, so not on the shared stack): a workload right-sized
   onto a big node of NodePool "chaos" is consolidated onto a cheaper one while the worker is SIGKILLed
   after the taint, after the replacement's launch and during the drain; nothing is leaked, doubled,
   left tainted or unbound.
2. Emptiness (no other module's nodes in the default NodePool to share the budget with; the chaos test
   uses its own pool, pinned): a Deployment scaled to 0 leaves no NodeClaim, Node or running instance
   within 60 s of its last pod going (default NodePool: WhenEmptyOrUnderutilized, consolidateAfter 0s,
   budget 10%, rounded up).

One stack for both: a stack costs CPU to start and to run, and the suite is CPU-bound.
"""

from __future__ import annotations

import time

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import assert_one_instance_per_claim, claim_tag, deployment, live_instances
from tests.e2e.disruption_views import (
    all_running,
    claim_prices,
    claims_of_pool,
    deleting,
    pinned,
    pods_of,
    pool,
    right_size,
    scale,
    tainted_nodes,
)
from tests.eventually import eventually

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(private_stack: DevStack) -> DevStack:
    """A stack of this module's own: its chaos test kills the worker, and no other module's nodes share
    its default NodePool's budget."""
    return private_stack


@pytest.mark.long
def test_a_worker_killed_during_a_consolidation_leaks_doubles_and_strands_nothing(stack: DevStack) -> None:
    stack.apply_text(pool("chaos", "100%"))
    stack.apply_text(deployment("chaos", 1, cpu="7", memory="2Gi", extra_spec=pinned("chaos")))
    eventually(lambda: all_running(stack, "chaos"), timeout=90, what="the big pod running")
    (big,) = claim_prices(stack, "chaos")
    right_size(stack, "chaos")

    moments = {
        "after the taint": lambda: bool(tainted_nodes(stack, {big})),
        "after the replacement's launch": lambda: len(claims_of_pool(stack, "chaos")) > 1,
        "during the drain": lambda: deleting(stack, big),
    }
    for moment, reached in moments.items():
        eventually(reached, timeout=120, interval=0.1, what=moment)
        stack.kill_worker()
        stack.start_worker()

    def settled() -> bool:
        claims = claim_prices(stack, "chaos")
        return len(claims) == 1 and big not in claims and all_running(stack, "chaos")

    eventually(settled, timeout=150, interval=0.5, what="the consolidation to finish after the kills")
    eventually(lambda: big not in claims_of_pool(stack, "chaos"), timeout=60, what="the old NodeClaim gone")
    (replacement,) = claim_prices(stack, "chaos")
    assert tainted_nodes(stack, {replacement}) == []  # the replacement is not left tainted
    assert claims_of_pool(stack, "chaos") == [replacement]  # no second replacement
    assert_one_instance_per_claim(stack)
    stack.kube.delete(r.DEPLOYMENT, "chaos", "default")


def test_a_deployment_scaled_to_zero_leaves_no_node_claim_node_or_instance_within_60s(stack: DevStack) -> None:
    stack.apply_text(deployment("shrink", 3, cpu="500m", memory="512Mi"))
    eventually(lambda: all_running(stack, "shrink"), timeout=90, what="pods running")
    claims = claims_of_pool(stack, "default")
    nodes = {
        c.get("status", {}).get("nodeName") for c in stack.kube.list(r.NODECLAIM) if c["metadata"]["name"] in claims
    }
    assert claims

    scale(stack, "shrink", 0)
    eventually(lambda: not pods_of(stack, "shrink"), timeout=90, what="pods gone")
    last_pod_gone = time.monotonic()

    def everything_gone() -> bool:
        names = {n["metadata"]["name"] for n in stack.kube.list(r.NODE)}
        instances = {claim_tag(i) for i in live_instances(stack)}
        return (
            not set(claims_of_pool(stack, "default")) & set(claims)
            and not names & nodes
            and not instances & set(claims)
        )

    eventually(everything_gone, timeout=60, interval=1, what="NodeClaims, Nodes and instances gone")
    print(f"empty nodes gone {time.monotonic() - last_pod_gone:.1f}s after the last pod")
