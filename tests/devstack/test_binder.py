"""The pod binder: its fit predicates (pure, table-driven), then bind passes against the emulated API."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devstack.binder import PodBinder
from devstack.binder import predicates as fit
from devstack.binder.binder import unschedulable_conditions
from devstack.kube.server import KubeApiServer
from kube.client import KubeClient
from kube.resources import NAMESPACE, NODE, POD
from kube.types import Obj
from tests.devstack.counting import CountingKube
from tests.eventually import eventually

# -- builders --------------------------------------------------------------------------------------


def make_node(
    name: str = "n1",
    cpu: str = "2",
    memory: str = "8Gi",
    pods: str = "110",
    ready: bool = True,
    labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    unschedulable: bool = False,
    extended: dict[str, str] | None = None,
) -> Obj:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "20Gi", **(extended or {})}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def make_pod(
    name: str = "p1",
    cpu: str | None = None,
    memory: str | None = None,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    container: Obj = {"name": "app", "image": "busybox", "resources": {"requests": requests}}
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [container], **spec},
    }


def anti_affinity(match_labels: dict[str, str], topology: str = "kubernetes.io/hostname", **term: Any) -> Obj:
    rule = {"labelSelector": {"matchLabels": match_labels}, "topologyKey": topology, **term}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [rule]}}


def node_affinity(*terms: list[Obj]) -> Obj:
    selector_terms = [{"matchExpressions": expressions} for expressions in terms]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": selector_terms}}}


# -- predicates ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"key": "a", "operator": "Equal", "value": "1"}, {"key": "a", "value": "1", "effect": "NoSchedule"}, True),
        ({"key": "a", "value": "2"}, {"key": "a", "value": "1", "effect": "NoSchedule"}, False),
        ({"key": "a", "operator": "Exists"}, {"key": "a", "value": "1", "effect": "NoExecute"}, True),
        ({"operator": "Exists"}, {"key": "anything", "effect": "NoSchedule"}, True),
        ({"key": "a", "operator": "Exists", "effect": "NoExecute"}, {"key": "a", "effect": "NoSchedule"}, False),
        ({"key": "b", "operator": "Exists"}, {"key": "a", "effect": "NoSchedule"}, False),
        ({"key": "a"}, {"key": "a", "effect": "NoSchedule"}, True),  # Equal with empty value
    ],
)
def test_tolerates(toleration: Obj, taint: Obj, expected: bool) -> None:
    assert fit.tolerates(toleration, taint) is expected


def test_prefer_no_schedule_taints_never_block() -> None:
    taints = [{"key": "soft", "effect": "PreferNoSchedule"}, {"key": "hard", "effect": "NoExecute"}]
    assert fit.untolerated_taint(taints, []) == {"key": "hard", "effect": "NoExecute"}
    assert fit.untolerated_taint(taints[:1], []) is None


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
        ({"key": "zone", "operator": "In", "values": ["c"]}, False),
        ({"key": "zone", "operator": "NotIn", "values": ["c"]}, True),
        ({"key": "missing", "operator": "NotIn", "values": ["c"]}, True),
        ({"key": "zone", "operator": "Exists"}, True),
        ({"key": "missing", "operator": "Exists"}, False),
        ({"key": "missing", "operator": "DoesNotExist"}, True),
        ({"key": "zone", "operator": "DoesNotExist"}, False),
        ({"key": "cpu", "operator": "Gt", "values": ["4"]}, True),
        ({"key": "cpu", "operator": "Gt", "values": ["8"]}, False),
        ({"key": "cpu", "operator": "Lt", "values": ["16"]}, True),
        ({"key": "cpu", "operator": "Lt", "values": ["8"]}, False),
        ({"key": "zone", "operator": "Gt", "values": ["1"]}, False),  # not an integer label
        ({"key": "missing", "operator": "Lt", "values": ["1"]}, False),
    ],
)
def test_expression_matches(expression: Obj, expected: bool) -> None:
    assert fit.expression_matches(expression, {"zone": "a", "cpu": "8"}) is expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, True),
        ({"nodeSelector": {"zone": "a"}}, True),
        ({"nodeSelector": {"zone": "b"}}, False),
        ({"affinity": node_affinity([{"key": "zone", "operator": "In", "values": ["b"]}])}, False),
        (
            {
                "affinity": node_affinity(
                    [{"key": "zone", "operator": "In", "values": ["b"]}],
                    [{"key": "zone", "operator": "In", "values": ["a"]}],
                )
            },
            True,
        ),  # terms are ORed
        (
            {
                "affinity": node_affinity(
                    [{"key": "zone", "operator": "In", "values": ["a"]}, {"key": "gpu", "operator": "Exists"}]
                )
            },
            False,
        ),  # expressions are ANDed
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                            ]
                        }
                    }
                }
            },
            True,
        ),
    ],
)
def test_node_selection(spec: Obj, expected: bool) -> None:
    pod = make_pod(**spec)
    assert fit.matches_node_selection(pod, make_node("n1", labels={"zone": "a"})) is expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                         {"name": "b", "resources": {"requests": {"cpu": "500m"}}}]},
         {"cpu": 1500, "memory": 2**30, "pods": 1}),
        ({"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}}}]}, {"cpu": 2000, "pods": 1}),
        ({"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
          "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]},
         {"cpu": 3000, "pods": 1}),
        ({"initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                             {"name": "i", "resources": {"requests": {"cpu": "1"}}}],
          "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}]},
         {"cpu": 2000, "pods": 1}),
        ({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
          "overhead": {"cpu": "250m", "memory": "64Mi"}},
         {"cpu": 1250, "memory": 64 * 2**20, "pods": 1}),
        ({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
         {"nvidia.com/gpu": 1, "pods": 1}),
    ],
    ids=["sum", "limits-default-requests", "init-max", "sidecar-adds", "overhead", "extended"],
)  # fmt: skip
def test_pod_requests(spec: Obj, expected: dict[str, int]) -> None:
    assert fit.pod_requests({"spec": spec}) == expected


@pytest.mark.parametrize(
    ("wanted", "used", "conflict"),
    [
        ({("TCP", "0.0.0.0", 80)}, {("TCP", "0.0.0.0", 80)}, True),
        ({("TCP", "10.0.0.1", 80)}, {("TCP", "0.0.0.0", 80)}, True),
        ({("TCP", "10.0.0.1", 80)}, {("TCP", "10.0.0.2", 80)}, False),
        ({("UDP", "0.0.0.0", 80)}, {("TCP", "0.0.0.0", 80)}, False),
        ({("TCP", "0.0.0.0", 81)}, {("TCP", "0.0.0.0", 80)}, False),
    ],
)
def test_ports_conflict(wanted: set[tuple[str, str, int]], used: set[tuple[str, str, int]], conflict: bool) -> None:
    assert fit.ports_conflict(wanted, used) is conflict


@pytest.mark.parametrize(
    ("pod", "node_pods", "reason"),
    [
        (make_pod(affinity=anti_affinity({"app": "web"})), [make_pod("o", labels={"app": "web"})],
         "node(s) didn't match pod anti-affinity rules"),
        (make_pod(affinity=anti_affinity({"app": "web"})), [make_pod("o", labels={"app": "db"})], None),
        (make_pod(affinity=anti_affinity({"app": "web"})),
         [make_pod("o", namespace="other", labels={"app": "web"})], None),  # own namespace only
        (make_pod(affinity=anti_affinity({"app": "web"}, namespaces=["other"])),
         [make_pod("o", namespace="other", labels={"app": "web"})], "node(s) didn't match pod anti-affinity rules"),
        (make_pod(affinity=anti_affinity({"app": "web"}, topology="topology.kubernetes.io/zone")),
         [make_pod("o", labels={"app": "web"})], None),  # only hostname topology is enforced
        (make_pod(labels={"app": "web"}), [make_pod("o", affinity=anti_affinity({"app": "web"}))],
         "node(s) didn't satisfy existing pods anti-affinity rules"),
    ],
    ids=["own-rule", "no-match", "other-namespace", "listed-namespace", "zone-topology", "existing-rule"],
)  # fmt: skip
def test_anti_affinity(pod: Obj, node_pods: list[Obj], reason: str | None) -> None:
    assert fit.anti_affinity_reason(pod, node_pods) == reason


@pytest.mark.parametrize(
    ("pod", "node", "used", "reasons"),
    [
        (make_pod(cpu="1"), make_node(), {}, []),
        (make_pod(cpu="1"), make_node(unschedulable=True), {}, ["node(s) were unschedulable"]),
        (make_pod(cpu="1"), make_node(ready=False), {},
         ["node(s) had untolerated taint {node.kubernetes.io/not-ready: }"]),
        (make_pod(), make_node(taints=[{"key": "a", "value": "b", "effect": "NoSchedule"}]), {},
         ["node(s) had untolerated taint {a: b}"]),
        (make_pod(tolerations=[{"key": "a", "operator": "Exists"}]),
         make_node(taints=[{"key": "a", "value": "b", "effect": "NoSchedule"}]), {}, []),
        (make_pod(nodeSelector={"zone": "x"}), make_node(), {}, ["node(s) didn't match Pod's node affinity/selector"]),
        (make_pod(cpu="3", memory="9Gi"), make_node(), {}, ["Insufficient cpu", "Insufficient memory"]),
        (make_pod(cpu="1"), make_node(), {"cpu": 1500}, ["Insufficient cpu"]),
        (make_pod(), make_node(pods="2"), {"pods": 2}, ["Too many pods"]),
        (make_pod(containers=[{"name": "g", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]), make_node(), {},
         ["Insufficient nvidia.com/gpu"]),
        (make_pod(containers=[{"name": "g", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]),
         make_node(extended={"nvidia.com/gpu": "1"}), {}, []),
    ],
    ids=["fits", "cordoned", "not-ready", "taint", "tolerated", "selector", "too-big", "full", "pods", "no-gpu", "gpu"],
)  # fmt: skip
def test_filter_reasons(pod: Obj, node: Obj, used: dict[str, int], reasons: list[str]) -> None:
    assert fit.filter_reasons(pod, node, [], used) == reasons


def test_host_ports_of_bound_pods_block() -> None:
    ported = make_pod(containers=[{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}]}])
    reasons = fit.filter_reasons(ported, make_node(), [ported], {})
    assert reasons == ["node(s) didn't have free ports for the requested pod ports"]


@pytest.mark.parametrize(
    ("reasons", "message"),
    [
        ([["Insufficient cpu"]] * 3, "0/3 nodes are available: 3 Insufficient cpu."),
        ([["Insufficient cpu", "Insufficient memory"], ["node(s) were unschedulable"]],
         "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) were unschedulable."),
        ([], "no nodes available to schedule pods"),
    ],
)  # fmt: skip
def test_unschedulable_message(reasons: list[list[str]], message: str) -> None:
    assert fit.unschedulable_message(reasons) == message


def test_most_allocated_prefers_the_fuller_node() -> None:
    requests = {"cpu": 500, "memory": 2**30}
    allocatable = {"cpu": 2000, "memory": 8 * 2**30}
    empty = fit.most_allocated_score(requests, {}, allocatable)
    busy = fit.most_allocated_score(requests, {"cpu": 1000, "memory": 2 * 2**30}, allocatable)
    assert 0 < empty < busy <= 1


def test_unschedulable_conditions_only_when_changed() -> None:
    pod = make_pod()
    conditions = unschedulable_conditions(pod, "0/1 nodes are available: 1 Insufficient cpu.", "t1")
    assert conditions == [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                           "message": "0/1 nodes are available: 1 Insufficient cpu.",
                           "lastProbeTime": None, "lastTransitionTime": "t1"}]  # fmt: skip
    pod["status"] = {"conditions": conditions}
    assert unschedulable_conditions(pod, "0/1 nodes are available: 1 Insufficient cpu.", "t2") is None
    changed = unschedulable_conditions(pod, "0/2 nodes are available: 2 Insufficient cpu.", "t3")
    assert changed is not None and changed[0]["lastTransitionTime"] == "t1"  # still False since t1


# -- bind passes against the emulated API ----------------------------------------------------------


@pytest.fixture(scope="module")
def api() -> Iterator[KubeApiServer]:
    server = KubeApiServer(controllers=False)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kube(api: KubeApiServer) -> Iterator[KubeClient]:
    client = KubeClient.for_url(api.url)
    yield client
    client.close()


@pytest.fixture
def namespace(kube: KubeClient) -> Iterator[str]:
    """A fresh namespace, and a clean node list: every test owns the whole cluster."""
    name = f"ns-{uuid.uuid4().hex[:8]}"
    for node in kube.list(NODE):
        kube.delete(NODE, node["metadata"]["name"])
    kube.create(NAMESPACE, {"metadata": {"name": name}})
    yield name
    for pod in kube.list(POD, name):
        kube.delete(POD, pod["metadata"]["name"], name)


def add_node(kube: KubeClient, node: Obj) -> None:
    kube.create(NODE, {"metadata": node["metadata"], "spec": node["spec"]})
    kube.patch(NODE, node["metadata"]["name"], {"status": node["status"]}, subresource="status")


def add_pod(kube: KubeClient, pod: Obj, namespace: str) -> None:
    pod["metadata"]["namespace"] = namespace
    kube.create(POD, pod)


def node_of(kube: KubeClient, namespace: str, pod: str) -> str | None:
    node: str | None = kube.get(POD, pod, namespace)["spec"].get("nodeName")
    return node


def test_binds_in_creation_order_packing_the_fullest_node(kube: KubeClient, namespace: str) -> None:
    add_node(kube, make_node("big", cpu="4"))
    add_node(kube, make_node("small", cpu="2"))
    for index in range(3):
        add_pod(kube, make_pod(f"p{index}", cpu="900m"), namespace)
    assert PodBinder(kube).bind_once() == 3
    # the first pod fills "small" more (900/2000 > 900/4000); the rest follow it until it is full
    assert [node_of(kube, namespace, f"p{index}") for index in range(3)] == ["small", "small", "big"]
    scheduled = {c["type"]: c["status"] for c in kube.get(POD, "p0", namespace)["status"]["conditions"]}
    assert scheduled["PodScheduled"] == "True"


def test_an_unschedulable_pod_gets_the_scheduler_condition_once(kube: KubeClient, namespace: str) -> None:
    add_node(kube, make_node("a", cpu="1"))
    add_node(kube, make_node("b", cpu="1", taints=[{"key": "gpu", "effect": "NoSchedule"}]))
    add_pod(kube, make_pod("huge", cpu="8"), namespace)
    binder = PodBinder(kube)
    assert binder.bind_once() == 0
    pod = kube.get(POD, "huge", namespace)
    condition = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["message"] == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {gpu: }."
    )
    binder.bind_once()
    assert kube.get(POD, "huge", namespace)["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]


def test_a_pending_pod_binds_once_a_node_turns_ready(kube: KubeClient, namespace: str) -> None:
    add_node(kube, make_node("late", ready=False))
    add_pod(kube, make_pod("waiting", cpu="100m"), namespace)
    binder = PodBinder(kube)
    assert binder.bind_once() == 0
    kube.patch(NODE, "late", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, subresource="status")
    assert binder.bind_once() == 1
    assert node_of(kube, namespace, "waiting") == "late"


def test_skips_bound_deleting_terminal_and_foreign_scheduler_pods(kube: KubeClient, namespace: str) -> None:
    add_node(kube, make_node("n"))
    add_pod(kube, make_pod("other-scheduler", schedulerName="custom"), namespace)
    add_pod(kube, make_pod("done"), namespace)
    kube.patch(POD, "done", {"status": {"phase": "Succeeded"}}, namespace, subresource="status")
    add_pod(kube, make_pod("leaving"), namespace)
    kube.patch(POD, "leaving", {"metadata": {"finalizers": ["example.com/hold"]}}, namespace)
    kube.delete(POD, "leaving", namespace)
    assert PodBinder(kube).bind_once() == 0
    kube.patch(POD, "leaving", {"metadata": {"finalizers": None}}, namespace)


def test_anti_affinity_spreads_replicas_over_nodes(kube: KubeClient, namespace: str) -> None:
    for name in ("n1", "n2"):
        add_node(kube, make_node(name))
    for index in range(3):
        add_pod(kube, make_pod(f"web{index}", labels={"app": "web"}, affinity=anti_affinity({"app": "web"})), namespace)
    assert PodBinder(kube).bind_once() == 2
    assert sorted(str(node_of(kube, namespace, f"web{i}")) for i in range(2)) == ["n1", "n2"]
    assert node_of(kube, namespace, "web2") is None


def test_run_loop_binds_until_stopped(kube: KubeClient, namespace: str) -> None:
    add_node(kube, make_node("n"))
    add_pod(kube, make_pod("looped", cpu="100m"), namespace)
    stop = threading.Event()
    thread = threading.Thread(target=PodBinder(kube, poll_interval=0.02).run, args=(stop,))
    thread.start()
    try:
        eventually(lambda: node_of(kube, namespace, "looped") == "n", what="the looped pod bound to n")
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_an_idle_run_loop_lists_only_at_its_backstop_and_wakes_on_change(kube: KubeClient, namespace: str) -> None:
    add_node(kube, make_node("n"))
    counting = CountingKube(kube)
    stop = threading.Event()
    # A fast poll that the idle loop must not use, and a short backstop to count a few passes quickly.
    binder = PodBinder(counting, poll_interval=0.02, backstop_interval=0.5)  # type: ignore[arg-type]
    thread = threading.Thread(target=binder.run, args=(stop,))
    thread.start()
    try:
        eventually(lambda: counting.total() >= 2, what="the first pass")
        before = counting.total()
        stop.wait(1.5)  # the idle window counted: a fixed 0.02 s poll would list ~150 times
        idle_lists = counting.total() - before
        assert idle_lists <= 2 * 6, f"an idle binder listed {idle_lists} times in 1.5 s"
        add_pod(kube, make_pod("woken", cpu="100m"), namespace)
        eventually(lambda: node_of(kube, namespace, "woken") == "n", what="the new pod bound to n")
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_a_pod_is_bound_on_its_event_not_at_the_backstop(kube: KubeClient, namespace: str) -> None:
    add_node(kube, make_node("n"))
    stop = threading.Event()
    binder = PodBinder(kube, poll_interval=0.02, backstop_interval=60)
    thread = threading.Thread(target=binder.run, args=(stop,))
    thread.start()
    try:
        add_pod(kube, make_pod("evented", cpu="100m"), namespace)
        eventually(lambda: node_of(kube, namespace, "evented") == "n", timeout=5, what="the pod bound to n")
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
