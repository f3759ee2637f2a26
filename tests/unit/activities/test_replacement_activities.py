"""The replacement activities (activities.replacement), each called directly over MemKube: the
replacement NodeClaim of a running claim, and its state."""

from __future__ import annotations

import pytest

from activities.models import ClaimRef
from activities.replace import REPLACEMENT_OF_ANNOTATION
from activities.replacement import ReplacementActivities, ReplacementInput
from apis.nodepool import TEMPLATE_HASH_VERSION
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from tests.unit.activities.claimworld import NAME
from tests.unit.activities.memkube import Events, MemKube


@pytest.fixture
def replacement(kube: MemKube, cloud: FakeCloudProvider, events: Events) -> ReplacementActivities:
    return ReplacementActivities(kube, cloud, events, "test")  # type: ignore[arg-type]


def test_a_replacement_is_created_once_and_reported_until_initialized(
    replacement: ReplacementActivities, kube: MemKube
) -> None:
    first = replacement.create_replacement(ReplacementInput(name=NAME, attempt=1))
    again = replacement.create_replacement(ReplacementInput(name=NAME, attempt=1))
    assert first.name == again.name and first.name.startswith("default-")
    created = kube.get(r.NODECLAIM, first.name)
    assert created["metadata"]["annotations"][REPLACEMENT_OF_ANNOTATION] == NAME
    assert created["metadata"]["labels"] == {"karpenter.sh/nodepool": "default", "team": "a"}
    assert first.expire_after == "720h"  # the NodePool's template, read now

    assert not replacement.replacement_state(ClaimRef(name=first.name)).initialized
    initialized = {
        "type": "Initialized",
        "status": "True",
        "reason": "Initialized",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    with kube.as_admin():
        kube.patch(r.NODECLAIM, first.name, {"status": {"conditions": [initialized]}}, subresource="status")
    assert replacement.replacement_state(ClaimRef(name=first.name)).initialized
    assert replacement.replacement_state(ClaimRef(name="gone")).gone


def test_a_replacement_of_a_claim_whose_nodepool_is_gone_copies_the_original(
    replacement: ReplacementActivities, kube: MemKube
) -> None:
    kube.delete(r.NODEPOOL, "default")
    result = replacement.create_replacement(ReplacementInput(name=NAME, attempt=1))
    assert result.name and result.expire_after is None  # the original's spec, which has none
    annotations = kube.get(r.NODECLAIM, result.name)["metadata"]["annotations"]
    assert annotations["karpenter.sh/nodepool-hash-version"] == TEMPLATE_HASH_VERSION  # the original's


def test_no_replacement_for_a_claim_being_deleted(replacement: ReplacementActivities, kube: MemKube) -> None:
    with kube.as_admin():
        kube.delete(r.NODECLAIM, NAME)
    result = replacement.create_replacement(ReplacementInput(name=NAME, attempt=1))
    assert result.name == "" and "being deleted" in result.message
