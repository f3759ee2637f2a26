"""kube.shared_reads: one GET per object per TTL, missing and invalid objects included."""

from __future__ import annotations

from typing import Any

import pytest

from apis.nodepool import NodePool
from kube import resources as r
from kube.errors import ServerError
from kube.fake import MemKube
from kube.shared_reads import SharedReads

NODE_CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}
POOL = {"metadata": {"name": "default"}, "spec": {"template": {"spec": {"nodeClassRef": NODE_CLASS_REF}}}}


class CountingKube(MemKube):
    def __init__(self) -> None:
        super().__init__()
        self.gets = 0
        self.fail = False

    def get(self, resource: r.Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.gets += 1
        if self.fail:
            raise ServerError("503")
        return super().get(resource, name, namespace)


def test_one_get_per_object_per_ttl() -> None:
    kube = CountingKube()
    kube.create(r.NODEPOOL, POOL)
    now = [0.0]
    reads = SharedReads(kube, ttl=10, clock=lambda: now[0])  # type: ignore[arg-type]
    for _ in range(5):
        pool = reads.get(NodePool, r.NODEPOOL, "default")
        assert pool is not None and pool.name == "default"
    assert reads.get(NodePool, r.NODEPOOL, "missing") is None
    assert reads.get(NodePool, r.NODEPOOL, "missing") is None
    assert kube.gets == 2
    now[0] = 10.0
    reads.get(NodePool, r.NODEPOOL, "default")
    assert kube.gets == 3


def test_an_invalid_object_reads_as_none_and_an_api_error_is_raised_uncached() -> None:
    kube = CountingKube()
    kube.create(r.NODEPOOL, {"metadata": {"name": "broken"}, "spec": {"template": {"spec": {}}}})
    reads = SharedReads(kube, clock=lambda: 0.0)  # type: ignore[arg-type]
    assert reads.get(NodePool, r.NODEPOOL, "broken") is None
    kube.fail = True
    with pytest.raises(ServerError):
        reads.get(NodePool, r.NODEPOOL, "other")
    kube.fail = False
    kube.create(r.NODEPOOL, {**POOL, "metadata": {"name": "other"}})
    assert reads.get(NodePool, r.NODEPOOL, "other") is not None


def test_a_fresh_read_goes_to_the_api_and_refreshes_what_is_remembered() -> None:
    kube = CountingKube()
    kube.create(r.NODEPOOL, POOL)
    reads = SharedReads(kube, ttl=10, clock=lambda: 0.0)  # type: ignore[arg-type]
    reads.get(NodePool, r.NODEPOOL, "default")
    kube.delete(r.NODEPOOL, "default")
    assert reads.get(NodePool, r.NODEPOOL, "default") is not None  # remembered
    assert reads.get(NodePool, r.NODEPOOL, "default", fresh=True) is None
    assert reads.get(NodePool, r.NODEPOOL, "default") is None  # the fresh read is remembered
    assert kube.gets == 2
