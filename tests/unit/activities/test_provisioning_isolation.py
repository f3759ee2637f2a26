"""One bad NodePool or EC2NodeClass never stops the others: `solve` reports it (status, Event, plan) and
plans every valid pool in the same round. Runs the provisioning activities over an in-memory API and the
real AWS node class resolution over in-memory EC2/SSM/IAM clients."""

from __future__ import annotations

import random
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities import nodepool_status
from activities.provisioning.models import ApplyPlanInput, ProvisionPlan, ProvisionRound
from activities.provisioning.provisioner import ProvisioningActivities, existing_nominations
from apis.nodeclaim import NodeClaim
from cloudprovider.errors import CloudProviderError, ThrottledError
from kube import resources as r
from kube.fake import Events, MemKube
from kube.types import Obj
from scheduling.types import ExistingNodePlacement
from tests.unit.activities.awsstub import DISCOVERY, ROLE, StubbedCloud

ROUND = ProvisionRound(run_id="run-1", round=1)
# A node class the API accepts but nodeflow cannot run here: Windows Server 2025 needs Kubernetes 1.35.
UNSUPPORTED = "spec.amiSelectorTerms[0].alias: Windows2025 requires Kubernetes 1.35 or later"
FIX = "the cluster runs 1.32"


class Starter:
    def __init__(self) -> None:
        self.started: list[str] = []

    def start_node_claim(self, claim: Obj, waiter: str = "") -> None:
        assert claim["metadata"]["uid"], "the workflow must be started with the claim's uid"
        self.started.append(claim["metadata"]["name"])


def node_class(name: str, alias: str = "al2023@latest", subnet_tags: dict[str, str] | None = None, **spec: Any) -> Obj:
    selector = [{"tags": subnet_tags or DISCOVERY}]
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": ROLE,
            "amiSelectorTerms": [{"alias": alias}],
            "subnetSelectorTerms": selector,
            "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
            **spec,
        },
    }


def node_pool(
    name: str,
    node_class_name: str,
    weight: int = 0,
    os: str = "",
    limits: dict[str, str] | None = None,
    team: str = "",
) -> Obj:
    """A NodePool; `os` and `team` add an `In` requirement on kubernetes.io/os and on `team`."""
    requirements = [{"key": "kubernetes.io/os", "operator": "In", "values": [os]}] if os else []
    if team:
        requirements.append({"key": "team", "operator": "In", "values": [team]})
    spec: Obj = {
        "template": {
            "spec": {
                "requirements": requirements,
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class_name},
            }
        },
        "limits": limits or {},
    }
    if weight:
        spec["weight"] = weight
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def pending_pod(name: str, node_selector: dict[str, str] | None = None) -> Obj:
    container = {"name": "app", "image": "app", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container], **({"nodeSelector": node_selector} if node_selector else {})},
        "status": {"phase": "Pending", "conditions": [unschedulable]},
    }


class World:
    def __init__(self, objects: list[Obj]) -> None:
        self.kube = MemKube()
        self.cloud = StubbedCloud()
        self.events = Events()
        self.starter = Starter()
        self.activities = ProvisioningActivities(self.kube, self.cloud, self.events, self.starter)
        kinds = {"NodePool": r.NODEPOOL, "EC2NodeClass": r.EC2NODECLASS, "Pod": r.POD}
        for obj in objects:
            self.kube.create(kinds[obj["kind"]], obj)

    def solve(self) -> ProvisionPlan:
        return ActivityEnvironment().run(self.activities.solve, ROUND)

    def apply(self, plan: ProvisionPlan) -> None:
        ActivityEnvironment().run(self.activities.apply_plan, ApplyPlanInput(round=ROUND, plan=plan))

    def condition(self, resource: r.Resource, name: str, type_: str) -> Obj:
        conditions = self.kube.get(resource, name).get("status", {}).get("conditions") or []
        return next(c for c in conditions if c["type"] == type_)


def windows_and_general_purpose() -> World:
    return World(
        [
            node_class("default"),
            node_pool("general-purpose", "default"),
            node_class("windows2022", alias="windows2022@latest"),
            node_pool("windows2022", "windows2022", weight=50, os="windows"),
            *(pending_pod(f"web-{i}", {"kubernetes.io/os": "linux"}) for i in range(5)),
            *(pending_pod(f"iis-{i}", {"kubernetes.io/os": "windows"}) for i in range(2)),
        ]
    )


def not_ready_and_general_purpose() -> World:
    """A valid general-purpose pool next to a `legacy` pool whose node class cannot resolve on this cluster
    (windows2025@latest on Kubernetes 1.32), and pods for each."""
    return World(
        [
            node_class("default"),
            node_pool("general-purpose", "default"),
            node_class("legacy", alias="windows2025@latest"),
            node_pool("legacy", "legacy", weight=50, team="legacy"),
            *(pending_pod(f"web-{i}") for i in range(5)),
            *(pending_pod(f"old-{i}", {"team": "legacy"}) for i in range(2)),
        ]
    )


def test_a_windows_pool_plans_windows_nodes_next_to_the_general_purpose_pool() -> None:
    world = windows_and_general_purpose()

    plan = world.solve()
    world.apply(plan)

    pools = {c.node_pool: sorted(c.pods) for c in plan.node_claims}
    assert set(pools) == {"general-purpose", "windows2022"}
    assert pools["windows2022"] == ["default/iis-0", "default/iis-1"]
    assert sorted(p for c in plan.node_claims if c.node_pool == "general-purpose" for p in c.pods) == [
        f"default/web-{i}" for i in range(5)
    ]
    windows = next(c for c in plan.node_claims if c.node_pool == "windows2022")
    assert windows.labels["kubernetes.io/os"] == "windows"
    assert plan.invalid == [] and plan.unschedulable == []
    for name in ("default", "windows2022"):
        assert world.condition(r.EC2NODECLASS, name, "Ready")["status"] == "True"
    assert world.condition(r.NODEPOOL, "windows2022", "Ready")["status"] == "True"


def test_a_node_class_that_cannot_resolve_is_reported_and_the_valid_pool_still_plans() -> None:
    world = not_ready_and_general_purpose()

    plan = world.solve()

    assert {c.node_pool for c in plan.node_claims} == {"general-purpose"}
    assert sorted(p for c in plan.node_claims for p in c.pods) == [f"default/web-{i}" for i in range(5)]
    bad = next(i for i in plan.invalid if i.kind == "EC2NodeClass")
    assert (bad.name, bad.reason) == ("legacy", "NodeClassNotReady")
    assert UNSUPPORTED in bad.message and FIX in bad.message
    ready = world.condition(r.EC2NODECLASS, "legacy", "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassNotReady")
    assert UNSUPPORTED in ready["message"] and FIX in ready["message"]
    assert world.condition(r.EC2NODECLASS, "default", "Ready")["status"] == "True"
    # one Event on the EC2NodeClass, one on its NodePool
    assert [reason for reason, message in world.events.recorded if UNSUPPORTED in message] == ["NodeClassNotReady"] * 2
    # pods only the legacy pool could take say which pool and node class keep them pending, and why
    reasons = {u.pod: u.reason for u in plan.unschedulable}
    assert sorted(reasons) == ["default/old-0", "default/old-1"]
    assert all("NodePool legacy" in why and 'EC2NodeClass "legacy"' in why for why in reasons.values())
    assert all(UNSUPPORTED in why for why in reasons.values())


def test_a_pool_of_another_providers_node_class_is_not_ours_to_provision_or_report() -> None:
    """Karpenter core's KWOK example: a NodePool whose nodeClassRef names a KWOKNodeClass. Karpenter's AWS
    provider leaves it alone (no launch, no status); it must not be taken for an EC2NodeClass of the same
    name."""
    kwok = node_pool("kwok", "default", weight=100)
    kwok["spec"]["template"]["spec"]["nodeClassRef"] = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass",
                                                         "name": "default"}  # fmt: skip
    world = World([node_class("default"), node_pool("general-purpose", "default"), kwok, pending_pod("web-0")])

    plan = world.solve()
    world.apply(plan)

    assert [c.node_pool for c in plan.node_claims] == ["general-purpose"]
    assert plan.invalid == []
    assert "status" not in world.kube.get(r.NODEPOOL, "kwok")


def test_apply_marks_the_node_pools_of_an_unready_node_class_as_karpenter_does() -> None:
    world = not_ready_and_general_purpose()
    plan = world.solve()

    world.apply(plan)

    ready = world.condition(r.NODEPOOL, "legacy", "Ready")
    node_class_ready = world.condition(r.NODEPOOL, "legacy", "NodeClassReady")
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassNotReady")
    assert (node_class_ready["status"], node_class_ready["reason"]) == ("False", "NodeClassNotReady")
    assert UNSUPPORTED in node_class_ready["message"]
    assert world.condition(r.NODEPOOL, "legacy", "ValidationSucceeded")["status"] == "True"
    for type_ in ("Ready", "NodeClassReady", "ValidationSucceeded"):
        assert world.condition(r.NODEPOOL, "general-purpose", type_)["status"] == "True"
    assert world.starter.started and all(n.startswith("general-purpose-") for n in world.starter.started)
    assert any(reason == "FailedScheduling" and "NodePool legacy" in m for reason, m in world.events.recorded)

    # a second round changes nothing and repeats no Event
    before = len(world.events.recorded)
    world.apply(world.solve())
    assert [e for e in world.events.recorded[before:] if e[0] != "FailedScheduling"] == []


def test_each_pod_a_new_claim_is_for_is_nominated_to_it_with_its_uid() -> None:
    world = windows_and_general_purpose()
    plan = world.solve()
    world.apply(plan)
    nominated = [(m, o) for (reason, m), o in zip(world.events.recorded, world.events.involved, strict=True)
                 if reason == "Nominated"]  # fmt: skip
    claims = {key: name for claim in plan.node_claims for key in claim.pods
              if (name := world.activities.launcher.claim_name(ROUND, claim))}  # fmt: skip
    assert len(nominated) == len(claims) > 0
    for message, pod in nominated:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        assert message == f"Pod should schedule on: nodeclaim/{claims[key]}"
        assert pod["metadata"]["uid"] == world.kube.get(r.POD, pod["metadata"]["name"], "default")["metadata"]["uid"]


def test_a_pod_placed_on_a_node_claim_in_flight_or_a_node_is_nominated_there_once() -> None:
    world = windows_and_general_purpose()
    world.apply(world.solve())  # the claims of this round are in flight now
    world.kube.create(r.POD, pending_pod("web-late"))
    before = len(world.events.recorded)
    plan = world.solve()
    assert plan.node_claims == [] and "default/web-late" in plan.nominated, "it fits on a claim in flight"
    world.apply(plan)
    late = [(m, o["metadata"]["name"]) for (reason, m), o in zip(world.events.recorded[before:],
            world.events.involved[before:], strict=True) if reason == "Nominated"]  # fmt: skip
    assert late == [(f"Pod should schedule on: {plan.nominated['default/web-late']}", "web-late")]
    assert late[0][0].startswith("Pod should schedule on: nodeclaim/")
    again = len(world.events.recorded)
    world.apply(world.solve())  # still pending, placed there again: not nominated again
    assert [e for e in world.events.recorded[again:] if e[0] == "Nominated"] == []


def test_existing_nominations_name_the_claim_and_the_node_as_karpenter_does() -> None:
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    claim = NodeClaim.model_validate(
        {"metadata": {"name": "default-abc"}, "spec": {"nodeClassRef": ref}, "status": {"nodeName": "ip-1"}}
    )
    placements = [
        ExistingNodePlacement(name="default-xyz", pods=["a/p1"], node_claim=True),
        ExistingNodePlacement(name="ip-1", pods=["a/p2"]),
        ExistingNodePlacement(name="static-node", pods=["a/p3"]),
    ]
    assert existing_nominations(placements, [claim]) == {
        "a/p1": "nodeclaim/default-xyz",
        "a/p2": "nodeclaim/default-abc, node/ip-1",
        "a/p3": "node/static-node",
    }


def test_node_pool_conditions_follow_a_fix_made_while_no_pod_is_pending() -> None:
    world = World([node_pool("late", "late")])  # its EC2NodeClass is not applied yet
    assert [i.name for i in world.solve().invalid] == ["late"]
    assert world.condition(r.NODEPOOL, "late", "Ready")["reason"] == "NodeClassNotFound"

    world.kube.create(r.EC2NODECLASS, node_class("late"))
    plan = world.solve()  # a round with nothing to plan or report: no apply_plan follows

    assert (plan.invalid, plan.node_claims, plan.unschedulable) == ([], [], [])
    for type_ in ("Ready", "NodeClassReady", "ValidationSucceeded"):
        assert world.condition(r.NODEPOOL, "late", type_)["status"] == "True"


def test_a_role_that_does_not_exist_makes_its_node_class_not_ready() -> None:
    world = World(
        [
            node_class("default"),
            node_pool("default", "default"),
            node_class("norole", role="KarpenterNodeRole-missing"),
            node_pool("norole", "norole", weight=10),
            pending_pod("web-0"),
        ]
    )

    plan = world.solve()

    assert [c.node_pool for c in plan.node_claims] == ["default"]
    message = world.condition(r.EC2NODECLASS, "norole", "Ready")["message"]
    assert 'spec.role "KarpenterNodeRole-missing"' in message and "create the role or fix spec.role" in message


def test_a_throttled_cloud_fails_the_round_so_temporal_retries_it() -> None:
    world = windows_and_general_purpose()
    world.cloud.fail_next("resolve_node_class", ThrottledError("DescribeSubnets: RequestLimitExceeded"))

    with pytest.raises(ThrottledError):
        world.solve()


def test_a_non_retryable_cloud_error_is_one_node_class_problem() -> None:
    world = windows_and_general_purpose()
    denied = CloudProviderError("DescribeSubnets: UnauthorizedOperation: denied", retryable=False)
    world.cloud.fail_next("resolve_node_class", denied)  # the first node class listed: "default"

    plan = world.solve()

    message = world.condition(r.EC2NODECLASS, "default", "Ready")["message"]
    assert "UnauthorizedOperation" in message
    assert {i.name for i in plan.invalid if i.kind == "EC2NodeClass"} == {"default"}
    assert {c.node_pool for c in plan.node_claims} == {"windows2022"}


def test_an_absurd_quantity_is_reported_on_its_node_pool_and_the_others_plan() -> None:
    world = World(
        [
            node_class("default"),
            node_pool("default", "default"),
            node_pool("huge", "default", weight=100, limits={"cpu": "1e30000000"}),
            pending_pod("web-0"),
        ]
    )

    plan = world.solve()
    world.apply(plan)

    assert [c.node_pool for c in plan.node_claims] == ["default"]
    ready = world.condition(r.NODEPOOL, "huge", "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ValidationFailed")
    validation = world.condition(r.NODEPOOL, "huge", "ValidationSucceeded")
    assert (validation["status"], validation["reason"]) == ("False", "NodePoolValidationFailed")
    assert "spec.limits.cpu" in ready["message"] and "out of range" in ready["message"]


# --- property: any mix of broken objects leaves the valid pools planning ------------------------------


def _broken(rng: random.Random, kind: str, name: str, valid_class: str) -> tuple[list[Obj], str]:
    """One broken object of `kind` (with the NodePool that uses it) and the text its report must contain."""
    weight = rng.randint(0, 100)
    if kind == "alias-too-new":  # windows2025 needs Kubernetes 1.35; the cluster runs 1.32
        return [node_class(name, alias="windows2025@latest"), node_pool(name, name, weight)], (
            "spec.amiSelectorTerms[0].alias: Windows2025 requires Kubernetes 1.35"
        )
    if kind == "unknown-alias":
        family = rng.choice(["ubuntu", "rhel", "flatcar"])
        return [node_class(name, alias=f"{family}@latest"), node_pool(name, name, weight)], (
            "spec.amiSelectorTerms[0].alias"
        )
    if kind == "no-subnets":
        tags = {"karpenter.sh/discovery": f"other-{rng.randint(0, 999)}"}
        return [node_class(name, subnet_tags=tags), node_pool(name, name, weight)], "subnetSelectorTerms"
    if kind == "absurd-quantity":
        resource = rng.choice(["cpu", "memory", "nodes"])
        value = rng.choice(["1e30000000", "9e99", "1" + "0" * 60, "1e-400", f"{rng.randint(10, 99)}Ei"])
        return [node_pool(name, valid_class, weight, limits={resource: value})], f"spec.limits.{resource}"
    assert kind == "missing-node-class"
    return [node_pool(name, f"{name}-absent", weight)], "nodeClassRef"


KINDS = ["alias-too-new", "unknown-alias", "no-subnets", "absurd-quantity", "missing-node-class"]


@pytest.mark.parametrize("seed", range(12))
def test_valid_pools_plan_whatever_broken_objects_are_mixed_in(seed: int) -> None:
    rng = random.Random(seed)
    objects: list[Obj] = []
    valid: set[str] = set()
    for i in range(rng.randint(1, 3)):
        name = f"{rng.choice('abcxyz')}{i}-valid"
        objects += [node_class(name, alias=rng.choice(["al2023@latest", "al2@latest", "bottlerocket@latest"]))]
        objects += [node_pool(name, name, rng.randint(0, 100))]
        valid.add(name)
    expected: dict[str, str] = {}
    for i, kind in enumerate(rng.sample(KINDS, k=len(KINDS))):
        name = f"{rng.choice('abcxyz')}{i}-{kind}"
        broken, text = _broken(rng, kind, name, rng.choice(sorted(valid)))
        objects += broken
        expected[name] = text
    pods = [pending_pod(f"web-{i}") for i in range(rng.randint(1, 8))]
    world = World(objects + pods)

    plan = world.solve()

    assert plan.node_claims, plan.unschedulable
    assert {c.node_pool for c in plan.node_claims} <= valid
    assert sorted(p for c in plan.node_claims for p in c.pods) == sorted(
        f"default/{p['metadata']['name']}" for p in pods
    )
    reported = {(i.kind, i.name): i.message for i in plan.invalid}
    for name, text in expected.items():
        messages = [m for (kind, n), m in reported.items() if n == name]
        assert messages and any(text in m for m in messages), (name, text, messages)
    world.apply(plan)
    for name in expected:
        assert world.condition(r.NODEPOOL, name, "Ready")["status"] == "False"
    for name in valid:
        assert world.condition(r.NODEPOOL, name, "Ready")["status"] == "True"


def test_pods_of_a_cluster_whose_only_pool_is_not_ready_say_so_and_name_the_node_class() -> None:
    world = World(
        [node_class("default", alias="windows2025@latest"), node_pool("default", "default"), pending_pod("web-0")]
    )

    world.apply(world.solve())

    failed = [m for reason, m in world.events.recorded if reason == "FailedScheduling"]
    assert failed and failed[0].startswith("Failed to schedule pod, no ready NodePool (default: ")
    assert 'EC2NodeClass "default" is not ready' in failed[0] and UNSUPPORTED in failed[0]


def test_apply_writes_each_pools_node_count_and_resources() -> None:
    world = windows_and_general_purpose()

    world.apply(world.solve())

    status = world.kube.get(r.NODEPOOL, "general-purpose")["status"]
    assert status["nodes"] == len([n for n in world.starter.started if n.startswith("general-purpose-")]) > 0
    assert status["resources"]["nodes"] == str(status["nodes"])
    windows = world.kube.get(r.NODEPOOL, "windows2022")["status"]
    assert windows["nodes"] == len([n for n in world.starter.started if n.startswith("windows2022-")]) > 0
    empty = not_ready_and_general_purpose()
    empty.apply(empty.solve())
    legacy = empty.kube.get(r.NODEPOOL, "legacy")["status"]
    assert (legacy["nodes"], legacy["resources"]["cpu"]) == (0, "0")


def test_apply_keeps_the_registration_health_a_claim_reported() -> None:
    world = not_ready_and_general_purpose()
    plan = world.solve()
    nodepool_status.set_registration_health(world.kube, "legacy", False, "NodeClaim x did not register")

    world.apply(plan)

    assert world.condition(r.NODEPOOL, "legacy", "NodeRegistrationHealthy")["status"] == "False"
    assert world.condition(r.NODEPOOL, "legacy", "Ready")["status"] == "False"


def test_pods_whose_spec_cannot_be_read_count_as_ignored() -> None:
    broken = pending_pod("broken")
    broken["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1}]  # no topologyKey
    world = World([node_class("default"), node_pool("default", "default"), pending_pod("fine"), broken])
    plan = world.solve()
    assert [u.pod for u in plan.unschedulable] == ["default/broken"]
    assert world.activities.metrics.registry.get_sample_value("karpenter_scheduler_ignored_pods_count") == 1


def test_a_node_pool_records_the_generation_of_its_node_class_it_last_observed() -> None:
    default = node_class("default")
    default["metadata"]["generation"] = 3
    world = World([default, node_pool("general-purpose", "default"), node_pool("orphan", "missing")])
    world.solve()
    assert world.kube.get(r.NODEPOOL, "general-purpose")["status"]["nodeClassObservedGeneration"] == 3
    assert "nodeClassObservedGeneration" not in world.kube.get(r.NODEPOOL, "orphan").get("status", {})
    world.kube.patch(r.EC2NODECLASS, "default", {"metadata": {"generation": 4}}, patch_type="merge")
    world.solve()
    assert world.kube.get(r.NODEPOOL, "general-purpose")["status"]["nodeClassObservedGeneration"] == 4


def test_a_node_pool_whose_requirements_leave_no_instance_type_gets_karpenters_warning() -> None:
    impossible = node_pool("impossible", "default")
    impossible["spec"]["template"]["spec"]["requirements"] = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["z9.nonexistent"]}
    ]
    world = World([node_class("default"), node_pool("general-purpose", "default"), impossible, pending_pod("web-0")])
    plan = world.solve()
    assert plan.node_pools_without_types == ["impossible"]
    world.apply(plan)
    warned = [(e, o["metadata"]["name"]) for e, o in zip(world.events.recorded, world.events.involved, strict=True)
              if e[0] == "NoCompatibleInstanceTypes"]  # fmt: skip
    assert warned == [
        (("NoCompatibleInstanceTypes", "NodePool requirements filtered out all compatible available instance types"),
         "impossible")
    ]  # fmt: skip


def test_a_node_pool_whose_template_is_not_an_object_is_reported_and_the_others_provision() -> None:
    broken = node_pool("broken", "default")
    broken["spec"]["template"] = "not-an-object"
    world = World([node_class("default"), node_pool("general-purpose", "default"), broken, pending_pod("web-0")])
    plan = world.solve()
    assert [c.node_pool for c in plan.node_claims] == ["general-purpose"]
    assert world.condition(r.NODEPOOL, "broken", "Ready")["status"] == "False"
