"""Two worker replicas on one stack: one holds the leader-election Lease and runs the watchers; SIGKILL
it and the other takes the Lease within the lease duration (the stack's FAST_FAILOVER); the pods
applied before the kill, right after it (while nobody leads) and once the other replica leads (only its
watchers can see them) are all bound, with one NodeClaim and one instance per pod (nothing launched twice)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import (
    FAST_FAILOVER,
    all_instances,
    assert_one_instance_per_claim,
    claim_tag,
    deployment,
    live_instances,
)
from tests.eventually import eventually
from workers.settings import Settings

pytestmark = pytest.mark.e2e

LEASE_NAME, LEASE_NAMESPACE = "nodeflow-leader-election", "nodeflow"  # the default name; the stack sets POD_NAMESPACE
SECOND = "worker-b"
APPS = ("le-before", "le-gap", "le-after")
POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: leader}
spec:
  disruption: {consolidateAfter: Never}
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"""
# One pod per node (hostname anti-affinity across both Deployments), so the pods say how many NodeClaims
# there must be.
ONE_PER_NODE = """      nodeSelector: {karpenter.sh/nodepool: leader}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchExpressions: [{key: app, operator: In, values: [le-before, le-gap, le-after]}]}
              topologyKey: kubernetes.io/hostname"""


@pytest.fixture(scope="module")
def stack(failover_stack: DevStack) -> DevStack:
    return failover_stack


def holder(stack: DevStack) -> str:
    spec = stack.kube.get(r.LEASE, LEASE_NAME, LEASE_NAMESPACE).get("spec") or {}
    return str(spec.get("holderIdentity") or "")


def worker_of(identity: str) -> str:
    """The worker name (its HOSTNAME) in a holderIdentity `<name>_<suffix>`."""
    return identity.rsplit("_", 1)[0]


def probe(stack: DevStack, name: str, path: str) -> int:
    try:
        with urllib.request.urlopen(stack.worker_probe_url(name) + path, timeout=3) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def bound(stack: DevStack, app: str, replicas: int) -> list[dict[str, Any]] | None:
    pods = stack.kube.list(r.POD, namespace="default", label_selector=f"app={app}")
    on_nodes = [p for p in pods if p["spec"].get("nodeName")]
    return pods if len(on_nodes) == replicas == len(pods) else None


def test_the_other_replica_takes_over_within_the_lease_duration_and_nothing_is_lost_or_doubled(
    stack: DevStack,
) -> None:
    stack.start_worker(SECOND)
    workers = ("worker", SECOND)
    for name in workers:
        eventually(lambda n=name: probe(stack, n, "/readyz") == 200, timeout=60, what=f"{name} ready")  # type: ignore[misc]
        assert probe(stack, name, "/healthz") == 200
    leader = worker_of(eventually(lambda: holder(stack), timeout=20, what="a Lease holder"))
    (follower,) = [n for n in workers if n != leader]
    log_of = {n: (stack.config.logs_dir / f"{n}.log") for n in workers}
    assert "acquired Lease" not in log_of[follower].read_text()  # exactly one ever led

    stack.apply_text(POOL)
    stack.apply_text(deployment(APPS[0], 2, cpu="1", memory="1Gi", extra_spec=ONE_PER_NODE))
    eventually(lambda: bound(stack, APPS[0], 2), timeout=60, what="the pods applied before the kill bound")

    stack.kill_worker(leader)
    killed_at = time.monotonic()
    stack.apply_text(deployment(APPS[1], 1, cpu="1", memory="1Gi", extra_spec=ONE_PER_NODE))
    new_holder = eventually(
        lambda: (h := holder(stack)) and worker_of(h) == follower and h,
        timeout=30,
        what=f"{follower} holding the Lease",
    )
    took = time.monotonic() - killed_at
    timing = Settings(
        **{f"leader_election_{key}": value for key, value in FAST_FAILOVER.items()}
    ).leader_election_timing()
    assert took <= timing.lease_duration + timing.retry_period + 3.0, f"failover took {took:.1f}s"
    assert worker_of(str(new_holder)) == follower

    eventually(lambda: bound(stack, APPS[1], 1), timeout=60, what="the pod applied right after the kill bound")
    stack.apply_text(deployment(APPS[2], 1, cpu="1", memory="1Gi", extra_spec=ONE_PER_NODE))
    eventually(lambda: bound(stack, APPS[2], 1), timeout=60, what="the pod applied under the new leader bound")
    assert bound(stack, APPS[0], 2) and bound(stack, APPS[1], 1)
    claims = stack.kube.list(r.NODECLAIM, label_selector="karpenter.sh/nodepool=leader")
    assert len(claims) == 4, [c["metadata"]["name"] for c in claims]  # one per pod: none launched twice
    names = {c["metadata"]["name"] for c in claims}
    assert len([i for i in live_instances(stack) if claim_tag(i) in names]) == 4
    launched = Counter(claim_tag(i) for i in all_instances(stack) if claim_tag(i) in names)
    assert {claim: n for claim, n in launched.items() if n != 1} == {}, "a claim got more than one instance"
    assert_one_instance_per_claim(stack)
    assert probe(stack, follower, "/readyz") == 200
    assert "acquired Lease" in log_of[follower].read_text()
