"""Chaos during a consolidation, on a stack of the module's own (it kills the worker): a workload
right-sized onto a big node is consolidated onto a cheaper one while the worker is SIGKILLed after the
taint, after the replacement's launch and during the drain; nothing is leaked, doubled, left tainted or
unbound."""

from __future__ import annotations

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import assert_one_instance_per_claim, deployment
from tests.e2e.disruption_views import (
    all_running,
    claim_prices,
    claims_of_pool,
    deleting,
    pinned,
    pool,
    right_size,
    tainted_nodes,
)
from tests.eventually import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.long]


@pytest.fixture(scope="module")
def stack(failover_stack: DevStack) -> DevStack:
    """A stack of this module's own that fails over fast: its test kills the worker."""
    return failover_stack


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
