"""A claim's activities never touch a Node or NodeClaim that is not its own.

The world: the workflow of claim `default-abcde` recorded its NodeClaim uid and its instance's providerID,
then the cluster was rebuilt: a new NodeClaim and a new Node carry the same names with other uids and
another instance. Every activity run with the stale identity must leave them as they are. MemKube also
refuses any Node or NodeClaim write without a resourceVersion or uid precondition (`UnguardedWrite`), and
the last test checks the source: no activity (nor worker-side watcher) writes a Node or NodeClaim except
through activities.nodeclaim.ownership.
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from activities.nodeclaim.launch import LaunchActivities, LaunchFailedInput, LaunchOutcome, MarkLaunchedInput
from activities.nodeclaim.lifecycle import node_claim_activities
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from activities.nodeclaim.registration import FindNodeInput, RegistrationActivities
from activities.nodeclaim.running import DriftCheckInput
from activities.nodeclaim.termination import BeginTerminationInput, DrainInput, TerminateInput
from cloudprovider.fake import FakeCloudProvider
from cloudprovider.types import TAG_NODECLAIM, Instance
from kube import resources as r
from kube.fake import Events, MemKube
from tests.unit.activities.claimworld import NODE_CLASS, POOL, claim_body, pod

NAME = "default-abcde"
STALE_UID = "uid-of-the-claim-that-is-gone"
STALE_PROVIDER_ID = "aws:///us-west-2a/i-old"
NEW_PROVIDER_ID = "aws:///us-west-2a/i-new"


@pytest.fixture
def kube() -> MemKube:
    kube = MemKube()
    kube.create(r.NODEPOOL, POOL)
    kube.create(r.EC2NODECLASS, NODE_CLASS)
    kube.create(r.NODECLAIM, claim_body())  # the new cluster's claim: same name, a new uid
    node = {
        "metadata": {"name": "node-1", "finalizers": ["karpenter.sh/termination"]},
        "spec": {"providerID": NEW_PROVIDER_ID},
    }
    kube.create(r.NODE, node)
    kube.create(r.POD, pod("web-1"))
    return kube


@pytest.fixture
def cloud() -> FakeCloudProvider:
    cloud = FakeCloudProvider()
    cloud.instances["i-new"] = Instance(
        id="i-new",
        instance_type="m5.large",
        zone="us-west-2a",
        capacity_type="on-demand",
        state="running",
        provider_id=NEW_PROVIDER_ID,
        tags={TAG_NODECLAIM: "another-claim"},
    )
    return cloud


@pytest.fixture
def acts(kube: MemKube, cloud: FakeCloudProvider) -> Any:
    """Every lifecycle activity of every phase, by name, as the worker registers them."""
    bound = node_claim_activities(kube, cloud, Events(), "test")  # type: ignore[arg-type]
    return SimpleNamespace(**{fn.__name__: fn for fn in bound})


@pytest.fixture
def before(kube: MemKube) -> dict[Any, Any]:
    return copy.deepcopy(kube.objects)


def stale(**extra: Any) -> dict[str, Any]:
    """The identity fields of the stale workflow: its claim's old uid, its old instance and Node uid."""
    return {
        "name": NAME,
        "uid": STALE_UID,
        "provider_id": STALE_PROVIDER_ID,
        "node_name": "node-1",
        "node_uid": "uid-of-the-node-that-is-gone",
        **extra,
    }


def unchanged(kube: MemKube, before: dict[Any, Any], cloud: FakeCloudProvider) -> None:
    assert kube.objects == before
    assert kube.evicted == [] and kube.deleted == []
    assert cloud.deleted == [] and cloud.create_calls == []


def test_launch_for_a_claim_whose_name_is_another_claims_launches_nothing(
    acts: Any, kube: MemKube, before: dict[Any, Any], cloud: FakeCloudProvider
) -> None:
    outcome = acts.launch(ClaimRef(name=NAME, uid=STALE_UID))
    assert outcome.failure == "NodeClaimGone" and "another NodeClaim" in outcome.message
    unchanged(kube, before, cloud)


def test_mark_launched_and_launch_failed_leave_another_claim_and_its_instance_alone(
    acts: Any, kube: MemKube, before: dict[Any, Any], cloud: FakeCloudProvider
) -> None:
    cloud.instances["i-new"] = cloud.instances["i-new"].model_copy(update={"tags": {TAG_NODECLAIM: NAME}})
    launch = LaunchOutcome(instance_id="i-old", instance_type="m5.large", zone="us-west-2a", provider_id="x")
    LaunchActivities(kube, cloud, Events(), "test").mark_launched(  # type: ignore[arg-type]
        MarkLaunchedInput(name=NAME, uid=STALE_UID, launch=launch)
    )
    acts.launch_failed(LaunchFailedInput(name=NAME, uid=STALE_UID, failure="InsufficientCapacity", message="no"))
    unchanged(kube, before, cloud)


def test_registration_of_a_gone_claim_ends_instead_of_waiting(acts: Any) -> None:
    found = acts.register(FindNodeInput(name=NAME, uid=STALE_UID, provider_id=NEW_PROVIDER_ID))
    assert found.claim_gone and not found.node_name


def test_register_node_leaves_a_same_named_node_with_another_provider_id_alone(
    acts: Any, kube: MemKube, before: dict[Any, Any], cloud: FakeCloudProvider
) -> None:
    own_claim = kube.get(r.NODECLAIM, NAME)["metadata"]["uid"]  # the claim is ours, the Node is not
    registration = RegistrationActivities(kube, cloud, Events(), "test")  # type: ignore[arg-type]
    registration.register_node(ClaimIdentity(**stale(uid=own_claim, node_uid="")))
    assert kube.get(r.NODE, "node-1") == before[("nodes", "", "node-1")]


def test_initialization_of_a_claim_whose_node_is_another_reports_gone(
    acts: Any, kube: MemKube, before: dict[Any, Any], cloud: FakeCloudProvider
) -> None:
    own_claim = kube.get(r.NODECLAIM, NAME)["metadata"]["uid"]
    result = acts.check_initialized(ClaimIdentity(**stale(uid=own_claim)))
    assert result.gone and not result.initialized and "Node node-1" in result.waiting_for
    assert acts.check_initialized(ClaimIdentity(**stale())).gone  # and the claim itself
    unchanged(kube, before, cloud)


def test_running_checks_see_another_claim_and_another_node_as_gone(
    acts: Any, kube: MemKube, before: dict[Any, Any], cloud: FakeCloudProvider
) -> None:
    check = acts.running_check(DriftCheckInput(**stale()))
    assert check.gone and not check.liveness.exists and not check.liveness.node_exists
    unchanged(kube, before, cloud)


def test_termination_never_drains_deletes_or_finalizes_what_is_not_ours(
    acts: Any, kube: MemKube, before: dict[Any, Any], cloud: FakeCloudProvider
) -> None:
    acts.begin_termination(BeginTerminationInput(**stale(), reason="the NodeClaim is gone", expired=True))
    progress = acts.drain_step(DrainInput(**stale(), force=True))
    assert progress.remaining == 0 and "nothing drained" in progress.message
    assert acts.terminate_instance(TerminateInput(name=NAME, uid=STALE_UID, instance_id="i-new")).gone
    assert acts.terminate_instance(TerminateInput(name=NAME, uid=STALE_UID, instance_id="")).gone
    acts.finalize(ClaimIdentity(**stale()))
    unchanged(kube, before, cloud)


def test_a_node_with_our_provider_id_but_another_uid_is_not_ours(
    acts: Any, kube: MemKube, before: dict[Any, Any], cloud: FakeCloudProvider
) -> None:
    progress = acts.drain_step(DrainInput(**stale(provider_id=NEW_PROVIDER_ID), force=True))
    assert progress.remaining == 0
    acts.finalize(ClaimIdentity(**stale(provider_id=NEW_PROVIDER_ID)))
    unchanged(kube, before, cloud)


def test_our_own_node_and_claim_are_drained_finalized_and_deleted(
    acts: Any, kube: MemKube, cloud: FakeCloudProvider
) -> None:
    """The same calls with the right identity do act (the checks above are not vacuous)."""
    claim_uid = kube.get(r.NODECLAIM, NAME)["metadata"]["uid"]
    node_uid = kube.get(r.NODE, "node-1")["metadata"]["uid"]
    cloud.instances["i-new"] = cloud.instances["i-new"].model_copy(update={"tags": {TAG_NODECLAIM: NAME}})
    mine = {"name": NAME, "uid": claim_uid, "provider_id": NEW_PROVIDER_ID, "node_name": "node-1", "node_uid": node_uid}
    acts.drain_step(DrainInput(**mine))
    assert kube.evicted == ["web-1"]
    assert not acts.terminate_instance(TerminateInput(name=NAME, uid=claim_uid, instance_id="i-new")).gone
    assert cloud.deleted == ["i-new"]
    acts.finalize(ClaimIdentity(**mine))
    assert not [key for key in kube.objects if key[0] in ("nodes", "nodeclaims")]


# -- every Node and NodeClaim write goes through activities.nodeclaim.ownership ------------------------------------

GUARDED_RESOURCES = {"NODE", "NODECLAIM"}
KUBE_WRITES = {"patch", "delete", "replace"}
KUBEOPS_WRITES = {"update", "delete_quietly", "remove_finalizer"}


def unguarded_writes(source: str) -> list[str]:
    """Calls in `source` that write a Node or NodeClaim without activities.nodeclaim.ownership: `<x>.kube.patch(
    r.NODE, ...)`, `kubeops.update(kube, r.NODECLAIM, ...)` and the like."""
    found = []
    for call in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)):
        func = call.func
        if not isinstance(func, ast.Attribute):
            continue
        owner = ast.unparse(func.value)
        is_kube = func.attr in KUBE_WRITES and owner.endswith("kube")
        is_kubeops = func.attr in KUBEOPS_WRITES and owner == "kubeops"
        resources = {a.attr for a in call.args if isinstance(a, ast.Attribute)}
        if (is_kube or is_kubeops) and resources & GUARDED_RESOURCES:
            found.append(f"line {call.lineno}: {ast.unparse(call)}")
    return found


def test_the_source_check_catches_a_direct_write() -> None:
    assert unguarded_writes("kubeops.update(self.kube, r.NODE, name, mutate)")
    assert unguarded_writes("self.kube.delete(r.NODECLAIM, name)")
    assert not unguarded_writes("ownership.delete(self.kube, owned)")
    assert not unguarded_writes("self.kube.delete(r.POD, name, namespace)")


def test_no_activity_or_watcher_writes_a_node_or_node_claim_except_through_ownership() -> None:
    root = Path(__file__).resolve().parents[3]
    offenders = {
        str(path.relative_to(root)): found
        for path in sorted(
            [*(root / "activities").rglob("*.py"), *(root / "workers").rglob("*.py"), root / "kube" / "ops.py"]
        )
        if path.name != "ownership.py" and (found := unguarded_writes(path.read_text()))
    }
    assert offenders == {}
