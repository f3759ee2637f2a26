"""The worker's metrics endpoints (workers.metrics_server) and the leader's cluster-state gauges
(workers.cluster_metrics): /metrics is prometheus-client's exposition, parsed back by its text parser; a
port already taken fails naming the setting; the gauges follow the cluster, dropping what is gone."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from activities.metrics import Metrics
from devstack.stack.ports import free_port
from kube import resources as r
from kube.types import Obj
from tests.unit.activities.memkube import MemKube
from workers.cluster_metrics import ClusterStateMetrics, cluster_series
from workers.metrics_server import MetricsPortError, MetricsServer, temporal_runtime


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield sock.getsockname()[1]


def node(name: str, pool: str, cpu: str = "1930m", memory: str = "7Gi") -> Obj:
    labels = {"karpenter.sh/nodepool": pool} if pool else {}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": cpu, "memory": memory}}}


def pool(name: str, limits: dict[str, str]) -> Obj:
    return {"metadata": {"name": name}, "spec": {"limits": limits}}


def test_metrics_are_served_at_slash_metrics_and_parse_back() -> None:
    metrics = Metrics()
    metrics.nodeclaims_created.labels(reason="provisioned", nodepool="default").inc(2)
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
        {"reason": "provisioned", "nodepool": "default"},
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
    assert allocatable == {("node-1", "default", "cpu"): 1.93, ("node-1", "default", "memory"): 7 * 2**30}
    assert usage[("default", "nodes")] == 2  # the Node, and the NodeClaim without a Node yet
    assert limit == {("default", "cpu"): 100, ("default", "memory"): 2**40}


def test_the_gauges_follow_the_cluster_and_are_cleared_when_leadership_ends() -> None:
    kube, metrics = MemKube(), Metrics()
    with kube.as_admin():
        kube.create(r.NODEPOOL, pool("default", {"cpu": "100"}))
        kube.create(r.NODE, node("node-1", "default"))
        kube.create(r.NODE, node("node-2", "default"))
    publisher = ClusterStateMetrics(kube, metrics, interval=0.01)
    value = metrics.registry.get_sample_value
    publisher.refresh()
    assert value("karpenter_nodes_allocatable", {"node_name": "node-2", "nodepool": "default", "resource_type": "cpu"})
    assert value("karpenter_nodepools_usage", {"nodepool": "default", "resource_type": "nodes"}) == 2
    assert value("karpenter_nodepools_limit", {"nodepool": "default", "resource_type": "cpu"}) == 100
    with kube.as_admin():
        kube.delete(r.NODE, "node-2")
    publisher.refresh()
    node_2 = {"node_name": "node-2", "nodepool": "default", "resource_type": "cpu"}
    assert value("karpenter_nodes_allocatable", node_2) is None
    assert value("karpenter_nodepools_usage", {"nodepool": "default", "resource_type": "nodes"}) == 1

    stop = threading.Event()
    stop.set()
    publisher.run(stop)  # stops at once: leadership ended
    assert value("karpenter_nodepools_limit", {"nodepool": "default", "resource_type": "cpu"}) is None
