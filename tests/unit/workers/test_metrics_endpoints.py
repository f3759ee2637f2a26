"""The worker's metrics endpoints (workers.metrics_server) and the leader's cluster-state gauges
(activities.metrics.cluster_refresh): /metrics is prometheus-client's exposition, parsed back by its text parser; a
port already taken fails naming the setting; the gauges follow the cluster, dropping what is gone."""

from __future__ import annotations

import copy
import socket
import threading
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from activities.metrics.cluster_refresh import ClusterStateMetrics, cluster_series
from activities.metrics.registry import Metrics
from apis.values.quantity import parse_quantity
from cloudprovider.fake import FakeCloudProvider
from devstack.stack.ports import free_port
from kube import resources as r
from kube.fake import MemKube, watch_cache_of
from kube.types import Obj
from kube.watch_cache import WATCHED
from workers.metrics_server import MetricsPortError, MetricsServer, temporal_runtime


def refresh(publisher: ClusterStateMetrics, kube: MemKube) -> None:
    """One refresh over what the watches hold of `kube` now; it leaves the cached objects as they were
    (they are shared with the watches)."""
    publisher.cluster = watch_cache_of(kube)
    before = copy.deepcopy([publisher.cluster.list(resource) for resource in WATCHED])
    assert publisher.refresh()
    assert [publisher.cluster.list(resource) for resource in WATCHED] == before


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield sock.getsockname()[1]


WELL_KNOWN = {
    "node.kubernetes.io/instance-type": "m5.large",
    "karpenter.sh/capacity-type": "spot",
    "topology.kubernetes.io/zone": "us-west-2a",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
}
NODE_LABELS = {
    "instance_type": "m5.large",
    "capacity_type": "spot",
    "zone": "us-west-2a",
    "arch": "amd64",
    "os": "linux",
}


def node(name: str, pool: str, cpu: str = "1930m", memory: str = "7Gi") -> Obj:
    labels = {"karpenter.sh/nodepool": pool, **WELL_KNOWN} if pool else {}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": cpu, "memory": memory}}}


def allocatable_labels(name: str, resource: str) -> dict[str, str]:
    return {"node_name": name, "nodepool": "default", "resource_type": resource, **NODE_LABELS}


def pool(name: str, limits: dict[str, str]) -> Obj:
    return {"metadata": {"name": name}, "spec": {"limits": limits}}


def test_metrics_are_served_at_slash_metrics_and_parse_back() -> None:
    metrics = Metrics()
    metrics.nodeclaims_created.labels(reason="provisioned", nodepool="default", min_values_relaxed="false").inc(2)
    server = MetricsServer(metrics.registry, free_port(), host="127.0.0.1")
    server.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as response:
            text = response.read().decode()
    finally:
        server.close()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    [sample] = families["karpenter_nodeclaims_created"].samples
    assert (sample.name, sample.labels, sample.value) == (
        "karpenter_nodeclaims_created_total",
        {"reason": "provisioned", "nodepool": "default", "min_values_relaxed": "false"},
        2,
    )
    assert "process_resident_memory_bytes" in {s.name for f in families.values() for s in f.samples}


def test_port_0_serves_nothing() -> None:
    server = MetricsServer(Metrics().registry, 0)
    server.start()
    server.close()
    assert temporal_runtime(0) is None


def test_a_taken_metrics_port_names_the_setting(taken_port: int) -> None:
    with pytest.raises(MetricsPortError, match=r"metrics_port \(flag --metrics-port, env NODEFLOW_METRICS_PORT\)"):
        MetricsServer(Metrics().registry, taken_port).start()


def test_a_taken_temporal_metrics_port_names_the_setting(taken_port: int) -> None:
    with pytest.raises(MetricsPortError, match=r"temporal_metrics_port \(flag --temporal-metrics-port, env"):
        temporal_runtime(taken_port)


def test_cluster_series_are_in_base_units_and_leave_out_nodes_of_no_pool() -> None:
    nodes = [node("node-1", "default"), node("other", "")]
    claims = [{"metadata": {"name": "c", "labels": {"karpenter.sh/nodepool": "default"}}, "status": {}}]
    allocatable, usage, limit = cluster_series(nodes, claims, [pool("default", {"cpu": "100", "memory": "1Ti"})])
    where = tuple(NODE_LABELS.values())
    assert allocatable == {
        ("node-1", "default", "cpu", *where): 1.93,
        ("node-1", "default", "memory", *where): 7 * 2**30,
    }
    assert usage[("default", "nodes")] == 2  # the Node, and the NodeClaim without a Node yet
    assert limit == {("default", "cpu"): 100, ("default", "memory"): 2**40}


def test_the_gauges_follow_the_cluster_and_are_cleared_when_leadership_ends() -> None:
    kube, metrics = MemKube(), Metrics()
    with kube.as_admin():
        kube.create(r.NODEPOOL, pool("default", {"cpu": "100"}))
        kube.create(r.NODE, node("node-1", "default"))
        kube.create(r.NODE, node("node-2", "default"))
    publisher = ClusterStateMetrics(watch_cache_of(kube), metrics, interval=0.01)
    value = metrics.registry.get_sample_value
    refresh(publisher, kube)
    assert value("karpenter_nodes_allocatable", allocatable_labels("node-2", "cpu"))
    assert value("karpenter_nodepools_usage", {"nodepool": "default", "resource_type": "nodes"}) == 2
    assert value("karpenter_nodepools_limit", {"nodepool": "default", "resource_type": "cpu"}) == 100
    with kube.as_admin():
        kube.delete(r.NODE, "node-2")
    refresh(publisher, kube)
    assert value("karpenter_nodes_allocatable", allocatable_labels("node-2", "cpu")) is None
    assert value("karpenter_nodepools_usage", {"nodepool": "default", "resource_type": "nodes"}) == 1

    stop = threading.Event()
    stop.set()
    publisher.run(stop)  # stops at once: leadership ended
    assert value("karpenter_nodepools_limit", {"nodepool": "default", "resource_type": "cpu"}) is None


OWNER = "/apis/apps/v1/namespaces/default/replicasets/web-1"  # Karpenter's self link of the pods' ReplicaSet


def pod_obj(name: str, uid: str, created: str, node_name: str = "", phase: str = "Pending", **conditions: str) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": uid, "creationTimestamp": created,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1"}]},
        "spec": {"nodeName": node_name} if node_name else {},
        "status": {"phase": phase, "conditions": [{"type": t, "status": "True", "lastTransitionTime": at}
                                                  for t, at in conditions.items()]},
    }  # fmt: skip


def test_pods_state_names_each_pod_where_it_runs_and_new_pods_are_timed_once() -> None:
    kube, metrics = MemKube(), Metrics()
    with kube.as_admin():
        kube.create(r.NODE, node("node-1", "default"))
        kube.create(r.POD, pod_obj("old", "u-old", "2020-01-01T00:00:00Z", "node-1", "Running"))
    publisher = ClusterStateMetrics(watch_cache_of(kube), metrics)
    publisher.started -= timedelta(minutes=1)  # as if it had started a minute ago: these pods came since
    start = publisher.started
    stamp = lambda seconds: (start + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # noqa: E731
    with kube.as_admin():
        kube.create(
            r.POD, pod_obj("web", "u-web", stamp(1), "node-1", "Running", PodScheduled=stamp(3), Ready=stamp(8))
        )
        kube.create(r.POD, pod_obj("waiting", "u-wait", stamp(1)))
    value = metrics.registry.get_sample_value
    refresh(publisher, kube)
    refresh(publisher, kube)  # seen again: not timed again
    web = {"name": "web", "namespace": "default", "owner": OWNER, "node": "node-1", "nodepool": "default",
           "phase": "Running", **{k: v for k, v in NODE_LABELS.items() if k != "os"}}  # fmt: skip
    assert value("karpenter_pods_state", web) == 1
    unbound = {"name": "waiting", "namespace": "default", "owner": OWNER, "node": "", "nodepool": "", "zone": "",
               "arch": "", "capacity_type": "", "instance_type": "", "phase": "Pending"}  # fmt: skip
    assert value("karpenter_pods_state", unbound) == 1
    # Only "web" is timed: "old" was there before the publisher started, "waiting" is neither bound nor running.
    assert value("karpenter_pods_bound_duration_seconds_count") == 1
    assert value("karpenter_pods_bound_duration_seconds_sum") == pytest.approx(2)
    assert value("karpenter_pods_startup_duration_seconds_count") == 1
    assert value("karpenter_pods_startup_duration_seconds_sum") == pytest.approx(7)
    with kube.as_admin():
        kube.delete(r.POD, "web", "default")
    refresh(publisher, kube)
    assert value("karpenter_pods_state", web) is None


def test_pods_waiting_to_be_bound_or_to_start_are_shown_until_they_are() -> None:
    kube, metrics = MemKube(), Metrics()
    now = datetime.now(UTC)
    stamp = lambda seconds: (now - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # noqa: E731
    with kube.as_admin():
        kube.create(r.NODE, node("node-1", "default"))
        kube.create(r.POD, pod_obj("waiting", "u-wait", stamp(30)))
        kube.create(r.POD, pod_obj("booting", "u-boot", stamp(20), "node-1", PodScheduled=stamp(5)))
        kube.create(r.POD, pod_obj("old", "u-old", stamp(600), "node-1", "Running"))  # never seen Pending
    publisher = ClusterStateMetrics(watch_cache_of(kube), metrics)
    value = metrics.registry.get_sample_value
    refresh(publisher, kube)
    pod = lambda name: {"name": name, "namespace": "default"}  # noqa: E731
    assert value("karpenter_pods_unbound_time_seconds", pod("waiting")) == pytest.approx(30, abs=5)
    assert value("karpenter_pods_unbound_time_seconds", pod("booting")) is None  # bound
    assert value("karpenter_pods_unstarted_time_seconds", pod("waiting")) == pytest.approx(30, abs=5)
    assert value("karpenter_pods_unstarted_time_seconds", pod("booting")) == pytest.approx(20, abs=5)
    assert value("karpenter_pods_unstarted_time_seconds", pod("old")) is None

    with kube.as_admin():  # "booting" runs but is not Ready yet: still unstarted; "waiting" is bound
        kube.delete(r.POD, "booting", "default")
        kube.create(r.POD, pod_obj("booting", "u-boot", stamp(20), "node-1", "Running", PodScheduled=stamp(5)))
        kube.delete(r.POD, "waiting", "default")
        kube.create(r.POD, pod_obj("waiting", "u-wait", stamp(30), "node-1", PodScheduled=stamp(1)))
    refresh(publisher, kube)
    assert value("karpenter_pods_unbound_time_seconds", pod("waiting")) is None
    assert value("karpenter_pods_unstarted_time_seconds", pod("booting")) == pytest.approx(20, abs=5)

    with kube.as_admin():  # "booting" is Ready; "waiting" is deleted
        kube.delete(r.POD, "booting", "default")
        kube.create(r.POD, pod_obj("booting", "u-boot", stamp(20), "node-1", "Running", Ready=stamp(1)))
        kube.delete(r.POD, "waiting", "default")
    refresh(publisher, kube)
    assert value("karpenter_pods_unstarted_time_seconds", pod("booting")) is None
    assert value("karpenter_pods_unstarted_time_seconds", pod("waiting")) is None


def test_offerings_are_published_from_the_catalog_and_dropped_when_gone() -> None:
    kube, metrics, cloud = MemKube(), Metrics(), FakeCloudProvider()
    publisher = ClusterStateMetrics(watch_cache_of(kube), metrics, cloud, offerings_interval=0)
    refresh(publisher, kube)
    value = metrics.registry.get_sample_value
    [first, *_] = cloud.instance_types(None)
    offering = first.offerings[0]
    key = {"instance_type": first.name, "capacity_type": offering.capacity_type, "zone": offering.zone}
    assert value("karpenter_cloudprovider_instance_type_offering_price_estimate", key) == offering.price
    assert value("karpenter_cloudprovider_instance_type_offering_available", key) == (1 if offering.available else 0)
    assert value("karpenter_cloudprovider_instance_type_cpu_cores", {"instance_type": first.name}) == float(
        parse_quantity(str(first.capacity["cpu"]))
    )
    assert metrics.catalog.collect() == metrics.catalog.collect()  # built once per catalog shown
    repriced = first.model_copy(update={"offerings": [offering.model_copy(update={"price": 9.5})]})
    metrics.catalog.show([repriced])
    assert value("karpenter_cloudprovider_instance_type_offering_price_estimate", key) == 9.5
    publisher.clear()
    assert value("karpenter_cloudprovider_instance_type_offering_price_estimate", key) is None


def workload(
    name: str,
    node_name: str,
    requests: dict[str, str],
    limits: dict[str, str],
    kind: str = "ReplicaSet",
    phase: str = "Running",
) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}",
                     "ownerReferences": [{"kind": kind, "name": f"{name}-owner"}]},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": requests,
                                                                                  "limits": limits}}]},
        "status": {"phase": phase},
    }  # fmt: skip


def scraped(metrics: Metrics, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of `family` as Prometheus's text parser reads the exposition: labels -> value."""
    text = generate_latest(metrics.registry).decode()
    [found] = [f for f in text_string_to_metric_families(text) if f.name == family]
    return {tuple(sorted(s.labels.items())): s.value for s in found.samples}


def test_node_requests_limits_overhead_and_lifetime_follow_the_pods_bound_to_each_node() -> None:
    kube, metrics = MemKube(), Metrics()
    node_1 = node("node-1", "default", cpu="1930m", memory="7Gi")
    node_1["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
    node_1["status"]["capacity"] = {"cpu": "2", "memory": "8Gi"}
    with kube.as_admin():
        kube.create(r.NODE, node_1)
        kube.create(r.NODE, node("other", ""))  # not nodeflow's: no series
        kube.create(r.POD, workload("web", "node-1", {"cpu": "500m", "memory": "1Gi"}, {"memory": "2Gi"}))
        kube.create(r.POD, workload("agent", "node-1", {"cpu": "100m"}, {"cpu": "200m"}, kind="DaemonSet"))
        kube.create(r.POD, workload("done", "node-1", {"cpu": "1"}, {}, phase="Succeeded"))  # finished: not counted
        kube.create(r.POD, workload("elsewhere", "other", {"cpu": "1"}, {}))
    publisher = ClusterStateMetrics(watch_cache_of(kube), metrics)
    refresh(publisher, kube)

    def at(resource: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(allocatable_labels("node-1", resource).items()))

    requests = scraped(metrics, "karpenter_nodes_total_pod_requests")
    assert requests == {at("cpu"): 0.6, at("memory"): 2**30, at("pods"): 2}  # the DaemonSet pod included
    assert scraped(metrics, "karpenter_nodes_total_pod_limits") == {at("cpu"): 0.2, at("memory"): 2 * 2**30}
    assert scraped(metrics, "karpenter_nodes_total_daemon_requests") == {at("cpu"): 0.1, at("memory"): 0, at("pods"): 1}
    assert scraped(metrics, "karpenter_nodes_total_daemon_limits") == {at("cpu"): 0.2, at("memory"): 0}
    overhead = scraped(metrics, "karpenter_nodes_system_overhead")
    assert overhead == {at("cpu"): pytest.approx(0.07), at("memory"): 2**30}
    [(lifetime_labels, lifetime)] = scraped(metrics, "karpenter_nodes_current_lifetime_seconds").items()
    assert dict(lifetime_labels) == {"node_name": "node-1", "nodepool": "default", **NODE_LABELS}
    assert lifetime > 5 * 365 * 24 * 3600
    utilization = scraped(metrics, "karpenter_cluster_utilization_percent")
    assert utilization == {(("resource_type", "cpu"),): pytest.approx(100 * 0.6 / 1.93),
                           (("resource_type", "memory"),): pytest.approx(100 / 7)}  # fmt: skip
    value = metrics.registry.get_sample_value
    assert (value("karpenter_cluster_state_node_count"), value("karpenter_cluster_state_synced")) == (1, 1)

    with kube.as_admin():
        kube.delete(r.POD, "web", "default")
    refresh(publisher, kube)
    assert scraped(metrics, "karpenter_nodes_total_pod_requests")[at("cpu")] == pytest.approx(0.1)
    publisher.clear()  # leadership ended
    assert scraped(metrics, "karpenter_nodes_total_pod_requests") == {}
    assert (value("karpenter_cluster_state_node_count"), value("karpenter_cluster_state_synced")) == (0, 0)


def test_nothing_is_published_before_every_watch_has_listed() -> None:
    kube, metrics = MemKube(), Metrics()
    with kube.as_admin():
        kube.create(r.NODEPOOL, pool("default", {"cpu": "100"}))
        kube.create(r.NODE, node("node-1", "default"))
    listing = watch_cache_of(kube, listed=tuple(resource for resource in WATCHED if resource != r.POD))
    publisher = ClusterStateMetrics(listing, metrics)
    assert not publisher.refresh()
    assert metrics.registry.get_sample_value("karpenter_cluster_state_synced") == 0
    assert scraped(metrics, "karpenter_nodes_allocatable") == {}
    unsynced = "karpenter_cluster_state_unsynced_time_seconds"
    first = metrics.registry.get_sample_value(unsynced)
    assert not publisher.refresh()
    assert (metrics.registry.get_sample_value(unsynced) or 0) >= (first or 0) >= 0  # counted from the first look
    pods = listing.store(r.POD)
    assert pods is not None
    pods.mark_synced()
    assert publisher.refresh()
    assert metrics.registry.get_sample_value("karpenter_cluster_state_synced") == 1
    assert metrics.registry.get_sample_value(unsynced) == 0
    assert scraped(metrics, "karpenter_nodes_allocatable")


def test_status_conditions_are_counted_per_object_and_their_transitions_by_type() -> None:
    kube, metrics = MemKube(), Metrics()
    unknown = {"type": "Ready", "status": "Unknown", "reason": "AwaitingReconciliation", "message": "",
               "lastTransitionTime": "2020-01-01T00:00:00Z"}  # fmt: skip
    with kube.as_admin():
        kube.create(r.NODECLAIM, {"metadata": {"name": "c-1"}, "spec": {}})
        kube.patch(r.NODECLAIM, "c-1", {"status": {"conditions": [unknown]}})
    publisher = ClusterStateMetrics(watch_cache_of(kube), metrics)
    refresh(publisher, kube)
    waiting = (("name", "c-1"), ("namespace", ""), ("reason", "AwaitingReconciliation"), ("status", "Unknown"),
               ("type", "Ready"))  # fmt: skip
    assert scraped(metrics, "operator_nodeclaim_status_condition_count") == {waiting: 1}
    assert scraped(metrics, "operator_nodeclaim_status_condition_current_status_seconds")[waiting] > 3600
    assert scraped(metrics, "operator_nodeclaim_status_condition_transitions") == {}  # the first read: a baseline

    ready = {**unknown, "status": "True", "reason": "Ready", "lastTransitionTime": "2020-01-01T00:01:30Z"}
    with kube.as_admin():
        kube.patch(r.NODECLAIM, "c-1", {"status": {"conditions": [ready]}})
    refresh(publisher, kube)
    refresh(publisher, kube)  # read again unchanged: not counted again
    is_ready = (("name", "c-1"), ("namespace", ""), ("reason", "Ready"), ("status", "True"), ("type", "Ready"))
    assert scraped(metrics, "operator_nodeclaim_status_condition_count") == {is_ready: 1}
    left = (("reason", "AwaitingReconciliation"), ("status", "Unknown"), ("type", "Ready"))
    assert scraped(metrics, "operator_nodeclaim_status_condition_transitions") == {left: 1}
    value = metrics.registry.get_sample_value
    held = {"type": "Ready", "status": "Unknown", "to_status": "True"}
    assert value("operator_nodeclaim_status_condition_transition_seconds_sum", held) == 90
    publisher.clear()
    assert scraped(metrics, "operator_nodeclaim_status_condition_count") == {}
