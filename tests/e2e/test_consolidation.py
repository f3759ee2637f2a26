"""Consolidation on the shared stack, each test on a NodePool of its own, observed through the
Kubernetes API only.

- A NodePool with `budgets: [{nodes: "0"}]` disrupts nothing: its empty node stays.
- A workload right-sized onto a big node is consolidated onto a cheaper one, its pod placed throughout.
- A pod annotated `karpenter.sh/do-not-disrupt: "true"` keeps its mostly idle node through whole
  controller decisions; with the annotation removed, the node is consolidated onto a cheaper one.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from cloudprovider.aws.pricing.tables import load_price_table
from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import deployment, nodeflow
from tests.e2e.disruption_views import (
    PendingWatch,
    all_running,
    claim_prices,
    claims_of_pool,
    controller_state,
    decisions_made,
    node_of,
    pinned,
    pods_of,
    pool,
    right_size,
    scale,
    tainted_nodes,
)
from tests.eventually import eventually

pytestmark = pytest.mark.e2e


def test_a_budget_of_zero_nodes_disrupts_nothing(stack: DevStack) -> None:
    stack.apply_text(pool("frozen", "0"))
    stack.apply_text(deployment("frozen", 1, cpu="500m", memory="512Mi", extra_spec=pinned("frozen")))
    eventually(lambda: all_running(stack, "frozen"), timeout=90, what="pods running")
    claims = claims_of_pool(stack, "frozen")
    assert claims
    scale(stack, "frozen", 0)
    eventually(lambda: not pods_of(stack, "frozen"), timeout=90, what="pods gone")
    # Two whole decisions after the pods went (one may have begun before) left the empty node. The
    # controller runs a round only for news, and on a shared stack a decision's kinds of rejection may not
    # change, so the evidence is the leader's decisions and what `nodeflow explain` says of the node.
    decisions = decisions_made(stack)
    eventually(lambda: decisions_made(stack) >= decisions + 2, timeout=60, interval=1,
               what="two whole decisions after the pods went")  # fmt: skip
    assert claims_of_pool(stack, "frozen") == claims
    explained = json.loads(nodeflow(stack, "explain", claims[0], "-o", "json").stdout)
    # Another pool's command may come first: then the node's reasons are those of the pass after it.
    reasons = explained["reasons"] + ((explained["later"] or {}).get("reasons") or [])
    assert not explained["candidate"] and "Budget" in {reason["code"] for reason in reasons}, explained
    stack.kube.delete(r.DEPLOYMENT, "frozen", "default")


@pytest.mark.long
def test_a_right_sized_workload_is_consolidated_onto_a_cheaper_node_with_its_pod_placed_throughout(
    stack: DevStack,
) -> None:
    prices = load_price_table().prices
    stack.apply_text(pool("resize", "100%"))
    stack.apply_text(deployment("resize", 1, cpu="7", memory="2Gi", extra_spec=pinned("resize")))
    eventually(lambda: all_running(stack, "resize"), timeout=90, what="the big pod running")
    big = claim_prices(stack, "resize")
    assert len(big) == 1
    big_type = next(iter(big.values()))

    # The workload is right-sized: the new pod fits on the big node, which is now mostly idle.
    right_size(stack, "resize")
    pending = PendingWatch(stack, "resize")

    def consolidated() -> bool:
        pending.sample()
        claims = claim_prices(stack, "resize")
        return len(claims) == 1 and next(iter(claims)) not in big and all_running(stack, "resize")

    try:
        eventually(consolidated, timeout=150, interval=0.5, what="the pod consolidated onto a cheaper node")
    except AssertionError as err:
        recent = asyncio.run(controller_state(stack)).recent
        raise AssertionError(f"{err}; claims {claim_prices(stack, 'resize')}; controller: {recent}") from None
    small_type = next(iter(claim_prices(stack, "resize").values()))
    assert prices[small_type] < prices[big_type], (small_type, big_type)
    assert pending.longest < 30, f"a pod was pending {pending.longest:.0f}s"
    print(f"{big_type} (${prices[big_type]}/h) -> {small_type} (${prices[small_type]}/h)")
    stack.kube.delete(r.DEPLOYMENT, "resize", "default")


@pytest.mark.long
def test_a_do_not_disrupt_pod_keeps_its_node_until_the_annotation_goes(stack: DevStack) -> None:
    prices = load_price_table().prices
    stack.apply_text(pool("keep", "100%"))
    annotations = {"karpenter.sh/do-not-disrupt": "true"}
    stack.apply_text(deployment("keep", 1, cpu="7", memory="2Gi", extra_spec=pinned("keep"), annotations=annotations))
    eventually(lambda: all_running(stack, "keep"), timeout=90, what="the big pod running")
    (big,) = claim_prices(stack, "keep")
    big_type = claim_prices(stack, "keep")[big]

    # Right-sized: the new (still annotated) pod fits on the big node, which is then mostly idle, and
    # would be replaced by a cheaper one (as the consolidation test above shows) but for the annotation.
    right_size(stack, "keep")

    def resized() -> dict[str, Any] | None:
        pods = pods_of(stack, "keep")
        small = [p for p in pods if p["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m"]
        return small[0] if len(pods) == 1 and small and all_running(stack, "keep") else None

    pod = eventually(resized, timeout=60, what="only the right-sized pod left")
    assert pod["spec"]["nodeName"] == node_of(stack, big)

    # A whole controller round after that found no command, the pod's annotation rejecting the node (a
    # round that decides a command validates and taints before it ends, and records the command instead;
    # `nodeflow explain` would name the pod, at ~7 s a call). Other pools' commands may come first.
    decisions = decisions_made(stack)

    def kept() -> str | None:
        state = asyncio.run(controller_state(stack))
        last = state.recent[-1] if state.recent else ""
        whole = decisions_made(stack) >= decisions + 2
        return last if whole and "no command" in last and "PodDoNotDisrupt" in last else None

    eventually(kept, timeout=60, interval=1, what="a whole controller round that left the node for its pod")
    assert claim_prices(stack, "keep") == {big: big_type}
    assert tainted_nodes(stack, {big}) == []

    # The annotation removed from the running pod (its ReplicaSet's replacement pod will carry it again,
    # on the cheaper node): the node is consolidated.
    name = pod["metadata"]["name"]
    stack.kube.patch(r.POD, name, {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": None}}}, "default")

    def consolidated() -> bool:
        claims = claim_prices(stack, "keep")
        return len(claims) == 1 and big not in claims and all_running(stack, "keep")

    try:
        eventually(consolidated, timeout=120, interval=0.5, what="the node consolidated once the annotation went")
    except AssertionError as err:
        recent = asyncio.run(controller_state(stack)).recent
        raise AssertionError(f"{err}; claims {claim_prices(stack, 'keep')}; controller: {recent}") from None
    small_type = next(iter(claim_prices(stack, "keep").values()))
    assert prices[small_type] < prices[big_type], (small_type, big_type)
    stack.kube.delete(r.DEPLOYMENT, "keep", "default")
