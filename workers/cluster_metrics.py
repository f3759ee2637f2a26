"""The cluster-state gauges (activities.metrics): `karpenter_nodes_allocatable` per node,
`karpenter_nodepools_usage` and `karpenter_nodepools_limit` per NodePool, each by resource type.

They describe the cluster, not what one worker did, so only the leader publishes them: `_lead`
(workers.worker) runs one `ClusterStateMetrics` in a thread, like the watchers. Every REFRESH_SECONDS it
lists Nodes, NodeClaims and NodePools and sets the gauges: a node's allocatable from its
`status.allocatable`, a pool's usage as its status counts it (activities.nodepool_status: its Nodes, and
its NodeClaims without a Node yet, plus `nodes`), a pool's limits from `spec.limits`. Series of nodes and
pools that are gone are removed; when the worker stops leading, all of them are, so a former leader does
not keep publishing a stale cluster. Quantities are in base units: cpu in cores, memory-like resources
in bytes, counts as they are.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from prometheus_client import Gauge

from activities.metrics import Metrics
from activities.nodepool_status import pool_resources
from apis import labels
from apis.quantity import parse_quantity
from kube import resources as r
from kube.types import Kube, Obj

log = logging.getLogger(__name__)
REFRESH_SECONDS = 10.0

Series = dict[tuple[str, ...], float]


def _numbers(quantities: Mapping[str, object]) -> dict[str, float]:
    """Each quantity as a number in base units; one that does not parse is left out."""
    out: dict[str, float] = {}
    for resource, quantity in quantities.items():
        try:
            out[resource] = float(parse_quantity(str(quantity)))
        except ValueError:
            continue
    return out


def _pool(obj: Obj) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(labels.NODEPOOL, ""))


def cluster_series(nodes: list[Obj], claims: list[Obj], pools: list[Obj]) -> tuple[Series, Series, Series]:
    """(allocatable by (node, pool, resource), usage by (pool, resource), limit by (pool, resource)) of these
    objects. Pure. Nodes without the NodePool label (not nodeflow's) are not counted."""
    allocatable: Series = {}
    for node in nodes:
        pool = _pool(node)
        if not pool:
            continue
        name = str(node["metadata"].get("name", ""))
        for resource, value in _numbers((node.get("status") or {}).get("allocatable") or {}).items():
            allocatable[(name, pool, resource)] = value
    usage: Series = {}
    for pool, (resources, _count) in pool_resources(nodes, claims).items():
        for resource, value in _numbers(resources).items():
            usage[(pool, resource)] = value
    limit: Series = {}
    for obj in pools:
        pool = str(obj["metadata"].get("name", ""))
        for resource, value in _numbers((obj.get("spec") or {}).get("limits") or {}).items():
            limit[(pool, resource)] = value
    return allocatable, usage, limit


class ClusterStateMetrics:
    """Publishes the cluster-state gauges of `metrics` from `kube` (see the module docstring). `run(stop)`
    until `stop` is set; `refresh()` once."""

    def __init__(self, kube: Kube, metrics: Metrics, interval: float = REFRESH_SECONDS) -> None:
        self.kube = kube
        self.metrics = metrics
        self.interval = interval
        self._published: dict[str, set[tuple[str, ...]]] = {}

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    self.refresh()
                except Exception:
                    log.exception("reading the cluster for its metrics failed; retrying in %gs", self.interval)
                stop.wait(self.interval)
        finally:
            self.clear()

    def refresh(self) -> None:
        nodes = self.kube.list(r.NODE)
        claims = self.kube.list(r.NODECLAIM)
        pools = self.kube.list(r.NODEPOOL)
        allocatable, usage, limit = cluster_series(nodes, claims, pools)
        self._publish("allocatable", self.metrics.nodes_allocatable, allocatable)
        self._publish("usage", self.metrics.nodepools_usage, usage)
        self._publish("limit", self.metrics.nodepools_limit, limit)

    def clear(self) -> None:
        """Remove every series this publisher set."""
        for gauge in (self.metrics.nodes_allocatable, self.metrics.nodepools_usage, self.metrics.nodepools_limit):
            gauge.clear()
        self._published.clear()

    def _publish(self, key: str, gauge: Gauge, series: Series) -> None:
        """Set each series, then remove the ones set last time and absent now (no scrape sees a gap)."""
        for label_values, value in series.items():
            gauge.labels(*label_values).set(value)
        for gone in self._published.get(key, set()) - series.keys():
            gauge.remove(*gone)
        self._published[key] = set(series)
