"""Fixtures of the NodeClaim phase activity tests (see claimworld.py). Test modules may override them."""

from __future__ import annotations

import pytest

from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.fake import Events, MemKube
from tests.unit.activities.claimworld import NODE, NODE_CLASS, POOL, claim_body


@pytest.fixture
def kube() -> MemKube:
    kube = MemKube()
    kube.create(r.NODEPOOL, POOL)
    kube.create(r.EC2NODECLASS, NODE_CLASS)
    kube.create(r.NODECLAIM, claim_body())
    kube.create(r.NODE, {"metadata": {"name": NODE}, "spec": {}})
    return kube


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def cloud() -> FakeCloudProvider:
    return FakeCloudProvider()
