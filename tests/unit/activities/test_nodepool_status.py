"""NodePool status.resources, status.nodes and NodeRegistrationHealthy (activities.nodepool_status): the
pure count over Nodes and NodeClaims, and the writes over MemKube (only when something changes)."""

from __future__ import annotations

from typing import Any

from activities import nodepool_status
from kube import resources as r
from kube.fake import MemKube
from tests.unit.activities.claimworld import POOL

POOL_LABEL = "karpenter.sh/nodepool"


def node(name: str, pool: str | None, **capacity: str) -> dict[str, Any]:
    labels = {POOL_LABEL: pool} if pool else {}
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": capacity}}


def claim(name: str, pool: str, node_name: str = "", **capacity: str) -> dict[str, Any]:
    status: dict[str, Any] = {"capacity": capacity} if capacity else {}
    if node_name:
        status["nodeName"] = node_name
    return {"metadata": {"name": name, "labels": {POOL_LABEL: pool}}, "status": status}


def test_a_claim_with_its_node_counts_once_with_the_nodes_capacity() -> None:
    nodes = [node("n1", "a", cpu="2", memory="8Gi", pods="29"), node("n2", "b", cpu="4")]
    claims = [
        claim("a-1", "a", "n1", cpu="2", memory="7Gi"),  # registered: the Node's capacity counts
        claim("a-2", "a", "", cpu="1500m", memory="2Gi", pods="10"),  # launched, no Node yet
        claim("a-3", "a"),  # not launched yet: a node, no capacity
    ]
    counts = nodepool_status.pool_resources(nodes, claims)
    resources, count = counts["a"]
    assert count == 3
    assert resources == {"cpu": "3500m", "ephemeral-storage": "0", "memory": "10Gi", "nodes": "3", "pods": "39"}
    assert counts["b"] == ({"cpu": "4", "ephemeral-storage": "0", "memory": "0", "nodes": "1", "pods": "0"}, 1)


def test_extended_resources_are_summed_and_unlabelled_objects_ignored() -> None:
    nodes = [node("gpu", "a", cpu="8", **{"nvidia.com/gpu": "1"}), node("other", None, cpu="64")]
    counts = nodepool_status.pool_resources(nodes, [claim("a-1", "a", **{"nvidia.com/gpu": "2"})])
    assert set(counts) == {"a"}
    assert counts["a"][0]["nvidia.com/gpu"] == "3"


def test_sync_counts_writes_only_when_the_counts_change() -> None:
    kube = MemKube()
    kube.create(r.NODEPOOL, POOL)
    kube.create(r.NODE, node("n1", "default", cpu="2", memory="4Gi"))
    nodepool_status.sync_counts(kube, "default")
    status = kube.get(r.NODEPOOL, "default")["status"]
    assert (status["nodes"], status["resources"]["cpu"], status["resources"]["nodes"]) == (1, "2", "1")
    version = kube.get(r.NODEPOOL, "default")["metadata"]["resourceVersion"]
    nodepool_status.sync_counts(kube, "default")
    nodepool_status.sync_all_counts(kube, ["default"])
    assert kube.get(r.NODEPOOL, "default")["metadata"]["resourceVersion"] == version
    nodepool_status.sync_counts(kube, "gone")  # a pool that does not exist is left alone


def test_registration_health_turns_false_then_true_and_repeats_are_not_written() -> None:
    kube = MemKube()
    kube.create(r.NODEPOOL, POOL)

    def health() -> tuple[str, str, str]:
        conditions = kube.get(r.NODEPOOL, "default")["status"]["conditions"]
        found = next(c for c in conditions if c["type"] == "NodeRegistrationHealthy")
        return found["status"], found["reason"], found["message"]

    nodepool_status.set_registration_health(kube, "default", False, "NodeClaim default-x did not register")
    assert health() == ("False", "RegistrationFailed", "NodeClaim default-x did not register")
    nodepool_status.set_registration_health(kube, "default", True, "node n1 registered")
    assert health() == ("True", "NodeRegistrationHealthy", "node n1 registered")
    version = kube.get(r.NODEPOOL, "default")["metadata"]["resourceVersion"]
    nodepool_status.set_registration_health(kube, "default", True, "node n2 registered")
    assert kube.get(r.NODEPOOL, "default")["metadata"]["resourceVersion"] == version


def test_a_recount_racing_with_another_is_retried_on_fresh_lists() -> None:
    class Racing(MemKube):
        """Another recount writes the pool between this one's read of the pool and its write."""

        raced = False

        def list(self, resource: r.Resource, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
            found = super().list(resource, *args, **kwargs)
            if resource == r.NODECLAIM and not self.raced:
                self.raced = True
                self.create(r.NODECLAIM, claim("default-2", "default", cpu="4"))
                self.patch(r.NODEPOOL, "default", {"status": {"nodes": 2}}, subresource="status")
            return found

    kube = Racing()
    kube.create(r.NODEPOOL, POOL)
    kube.create(r.NODECLAIM, claim("default-1", "default", cpu="2"))
    nodepool_status.sync_counts(kube, "default")
    status = kube.get(r.NODEPOOL, "default")["status"]
    assert (status["nodes"], status["resources"]["cpu"]) == (2, "6")
