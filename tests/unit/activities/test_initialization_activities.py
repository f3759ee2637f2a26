"""The initialization phase's activity (activities.nodeclaim.initialization), called directly over MemKube:
check_initialized."""

from __future__ import annotations

import pytest

from activities.nodeclaim.initialization import InitializationActivities
from activities.nodeclaim.models import ClaimIdentity
from activities.nodeclaim.translate import shape_issues
from apis.nodeclaim import NodeClaim
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.fake import Events, MemKube
from tests.unit.activities.claimworld import NAME, NODE, as_admin_patch, condition

PROVIDER_ID = "aws:///us-west-2a/i-0123"
READY = {"conditions": [{"type": "Ready", "status": "True"}]}


@pytest.fixture
def initialization(kube: MemKube, cloud: FakeCloudProvider, events: Events) -> InitializationActivities:
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"providerID": PROVIDER_ID}})
    return InitializationActivities(kube, cloud, events, "test")  # type: ignore[arg-type]


IDENT = ClaimIdentity(name=NAME, provider_id=PROVIDER_ID, node_name=NODE)


def initialized(kube: MemKube) -> tuple[str, str, str]:
    found = condition(kube, "Initialized")
    assert found is not None
    return found["status"], found["reason"], found["message"]


def test_a_node_not_ready_is_waited_for(initialization: InitializationActivities, kube: MemKube) -> None:
    result = initialization.check_initialized(IDENT)
    waiting = "Node node-1 to be Ready (no Ready condition yet)"
    assert (result.initialized, result.gone, result.waiting_for) == (False, False, waiting)
    assert initialized(kube) == ("Unknown", "NodeNotReady", f"waiting for {waiting}")
    not_ready = {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}
    as_admin_patch(kube, r.NODE, NODE, {"status": not_ready}, subresource="status")
    initialization.check_initialized(IDENT)
    assert initialized(kube) == ("Unknown", "NodeNotReady", "waiting for Node node-1 to be Ready (KubeletNotReady)")


def test_the_waiting_reason_is_written_only_when_it_changes(
    initialization: InitializationActivities, kube: MemKube
) -> None:
    initialization.check_initialized(IDENT)
    version = kube.get(r.NODECLAIM, NAME)["metadata"]["resourceVersion"]
    initialization.check_initialized(IDENT)
    assert kube.get(r.NODECLAIM, NAME)["metadata"]["resourceVersion"] == version


def test_a_startup_taint_is_waited_for(initialization: InitializationActivities, kube: MemKube) -> None:
    startup = {"key": "example.com/agent", "effect": "NoSchedule"}
    as_admin_patch(kube, r.NODECLAIM, NAME, {"spec": {"startupTaints": [startup]}})
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"taints": [startup]}})
    as_admin_patch(kube, r.NODE, NODE, {"status": READY}, subresource="status")
    assert "startup taint example.com/agent" in initialization.check_initialized(IDENT).waiting_for
    status, reason, message = initialized(kube)
    assert (status, reason) == ("Unknown", "StartupTaintsExist")
    assert message == "waiting for startup taint example.com/agent:NoSchedule to be removed from Node node-1"


def test_an_ephemeral_taint_is_waited_for(initialization: InitializationActivities, kube: MemKube) -> None:
    taint = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"taints": [taint]}})
    as_admin_patch(kube, r.NODE, NODE, {"status": READY}, subresource="status")
    initialization.check_initialized(IDENT)
    assert initialized(kube)[:2] == ("Unknown", "KnownEphemeralTaintsExist")
    assert "node.kubernetes.io/not-ready:NoSchedule" in initialized(kube)[2]


def test_a_node_readiness_controller_taint_is_waited_for(
    initialization: InitializationActivities, kube: MemKube
) -> None:
    taint = {"key": "readiness.k8s.io/NetworkReady", "value": "pending", "effect": "NoSchedule"}
    as_admin_patch(kube, r.NODE, NODE, {"spec": {"taints": [taint]}})
    as_admin_patch(kube, r.NODE, NODE, {"status": READY}, subresource="status")
    initialization.check_initialized(IDENT)
    assert initialized(kube)[:2] == ("Unknown", "KnownEphemeralTaintsExist")
    assert "readiness.k8s.io/NetworkReady:NoSchedule" in initialized(kube)[2]


def test_a_requested_resource_is_waited_for(initialization: InitializationActivities, kube: MemKube) -> None:
    as_admin_patch(kube, r.NODECLAIM, NAME, {"spec": {"resources": {"requests": {"nvidia.com/gpu": "1"}}}})
    as_admin_patch(kube, r.NODE, NODE, {"status": READY}, subresource="status")
    result = initialization.check_initialized(IDENT)
    assert not result.initialized
    status, reason, message = initialized(kube)
    assert (status, reason) == ("Unknown", "ResourceNotRegistered")
    assert message.startswith("waiting for resource nvidia.com/gpu") and "Node node-1" in message


def test_a_ready_node_initializes_the_claim_and_its_claim_turns_ready(
    initialization: InitializationActivities, kube: MemKube
) -> None:
    up = [{"type": t, "status": "True", "reason": t, "lastTransitionTime": "2026-01-01T00:00:00Z"}
          for t in ("Launched", "Registered")]  # fmt: skip
    as_admin_patch(kube, r.NODECLAIM, NAME, {"status": {"conditions": up}}, subresource="status")
    assert not initialization.check_initialized(IDENT).initialized  # the Node is not Ready yet
    ready = condition(kube, "Ready")
    assert ready and (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown", "ReconcilingDependents", "Initialized=Unknown")  # fmt: skip
    as_admin_patch(kube, r.NODE, NODE, {"status": READY}, subresource="status")
    assert initialization.check_initialized(IDENT).initialized
    assert kube.get(r.NODE, NODE)["metadata"]["labels"]["karpenter.sh/initialized"] == "true"
    for type_ in ("Initialized", "Ready"):
        set_ = condition(kube, type_)
        assert set_ and set_["status"] == "True"


def test_a_gone_node_or_claim_ends_the_wait(initialization: InitializationActivities, kube: MemKube) -> None:
    other_node = ClaimIdentity(name=NAME, provider_id="aws:///us-west-2a/i-other", node_name=NODE)
    assert initialization.check_initialized(other_node).gone
    result = initialization.check_initialized(ClaimIdentity(name=NAME, uid="another-uid", node_name=NODE))
    assert result.gone and "is gone" in result.waiting_for


@pytest.mark.parametrize(
    ("node_capacity", "expected"),
    [
        ({"cpu": "2", "memory": "7800Mi", "nvidia.com/gpu": "1"}, []),  # 95% of the memory is within the 90%
        (
            {"cpu": "2", "memory": "6Gi", "nvidia.com/gpu": "1"},
            ["expected 8Gi of resource memory, but found 6Gi (75.0% of expected)"],
        ),
        ({"cpu": "2", "memory": "8Gi"}, ["expected resource 'nvidia.com/gpu' didn't register on the node"]),
    ],
)
def test_the_node_shape_check_compares_what_registered_with_what_the_claim_expected(
    node_capacity: dict[str, str], expected: list[str]
) -> None:
    claim = NodeClaim.model_validate(
        {"metadata": {"name": NAME}, "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
         "name": "default"}}, "status": {"capacity": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1", "pods": "0"}}}
    )  # fmt: skip
    assert shape_issues({"status": {"capacity": node_capacity}}, claim) == expected


def test_a_node_short_of_what_its_claim_expected_fails_the_consistency_check_but_initializes(
    initialization: InitializationActivities, kube: MemKube, events: Events
) -> None:
    as_admin_patch(
        kube, r.NODECLAIM, NAME, {"status": {"capacity": {"cpu": "2", "memory": "8Gi"}}}, subresource="status"
    )
    as_admin_patch(
        kube, r.NODE, NODE, {"status": {**READY, "capacity": {"cpu": "2", "memory": "4Gi"}}}, subresource="status"
    )
    assert initialization.check_initialized(IDENT).initialized
    consistent = condition(kube, "ConsistentStateFound")
    assert consistent and (consistent["status"], consistent["reason"]) == ("False", "ConsistencyCheckFailed")
    assert consistent["message"] == "expected 8Gi of resource memory, but found 4Gi (50.0% of expected)"
    assert [(reason, m) for reason, m in events.recorded if reason == "FailedConsistencyCheck"] == [
        ("FailedConsistencyCheck", consistent["message"])
    ]
    assert initialized(kube)[:2] == ("True", "Initialized")  # the check informs; it does not hold the node back


def test_a_node_as_expected_is_consistent(initialization: InitializationActivities, kube: MemKube) -> None:
    as_admin_patch(
        kube, r.NODECLAIM, NAME, {"status": {"capacity": {"cpu": "2", "memory": "8Gi"}}}, subresource="status"
    )
    as_admin_patch(
        kube, r.NODE, NODE, {"status": {**READY, "capacity": {"cpu": "2", "memory": "8Gi"}}}, subresource="status"
    )
    initialization.check_initialized(IDENT)
    assert condition(kube, "ConsistentStateFound")["status"] == "True"  # type: ignore[index]
