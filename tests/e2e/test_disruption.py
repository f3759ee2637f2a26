"""Emptiness on a stack of the module's own (no other test's nodes in its default NodePool to share the
budget with), observed through the Kubernetes API and EC2 only: a Deployment scaled to 0 leaves no
NodeClaim, Node or running instance within 60 s of its last pod going (default NodePool:
WhenEmptyOrUnderutilized, consolidateAfter 0s, budget 10%, rounded up)."""

from __future__ import annotations

import time

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import claim_tag, deployment, live_instances
from tests.e2e.disruption_views import (
    all_running,
    claims_of_pool,
    pods_of,
    scale,
)
from tests.eventually import eventually

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(private_stack: DevStack) -> DevStack:
    """A stack of this module's own: no other test's nodes share its default NodePool's budget."""
    return private_stack


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
