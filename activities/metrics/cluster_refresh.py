"""The cluster-state gauges (activities.metrics.registry), Karpenter's: per node `karpenter_nodes_allocatable`,
`_total_pod_requests`, `_total_pod_limits`, `_total_daemon_requests`, `_total_daemon_limits`,
`_system_overhead` and `_current_lifetime_seconds`; `karpenter_nodepools_usage` and
`karpenter_nodepools_limit` per NodePool; `karpenter_cluster_utilization_percent`, each by resource type;
`karpenter_cluster_state_node_count` and `_synced`; `karpenter_pods_state` per pod, with the pod start-up
histograms and the gauges of pods still waiting to be bound or to start; the status-condition metrics of
NodeClaims, NodePools, nodeflow's Nodes and EC2NodeClasses
(activities.metrics.condition_readings); and the instance-type offering gauges.

They describe the cluster, not what one worker did, so only the leader publishes them: `_lead`
(workers.worker) runs one `ClusterStateMetrics` in a thread, like the watchers. Every REFRESH_SECONDS it
reads Nodes, NodeClaims, NodePools, Pods and EC2NodeClasses from the leader's watch cache
(kube.watch_cache, kept by the watchers' reflectors), not from the API server: an idle cluster of N pods
costs no LIST of N pods every 10 s. `karpenter_cluster_state_synced` is 0 until every one of those
watches has listed, and nothing else is published until then. Then it sets the gauges: a node's allocatable from its
`status.allocatable` (labelled with its instance type, capacity type, zone, arch and os, so a price can be
joined to it), the requests and limits of the pods bound to it (DaemonSet pods apart too), its capacity
minus allocatable and its age, the cluster's utilization (the pods' requests over the nodes' allocatable),
a pool's usage as its status counts it (activities.nodepool_status: its Nodes, and its
NodeClaims without a Node yet, plus `nodes`), a pool's limits from `spec.limits`, each pod's state (its
phase and where it runs). Series of nodes, pools and pods that are gone are removed; when the worker stops
leading, all of them are, so a former leader does not keep publishing a stale cluster. Quantities are in
base units: cpu in cores, memory-like resources in bytes, counts as they are.

Pods created after this publisher started are timed once each: `karpenter_pods_bound_duration_seconds`
from creation to scheduling (the PodScheduled condition's time) and `karpenter_pods_startup_duration_seconds`
from creation to running (the Ready condition's time); the time the publisher saw it when the condition
has none. Older pods are not: a new leader would time them again.

As Karpenter's, `karpenter_pods_unbound_time_seconds` shows each Pending pod not bound yet, and
`karpenter_pods_unstarted_time_seconds` each pod seen Pending and not Ready yet, by name and namespace, with
the seconds since its creation (an alert on a pod stuck waiting reads them); a pod's series goes when it is
bound, Ready, ended or deleted.

Every OFFERINGS_REFRESH_SECONDS it reads the instance-type catalog (the cloud provider's cached one) and
shows it to `karpenter_cloudprovider_instance_type_offering_available` and `_price_estimate` (by instance
type, capacity type and zone) and `karpenter_cloudprovider_instance_type_cpu_cores` and `_memory_bytes`,
which render it when scraped (activities.metrics.cluster_state.CatalogGauges).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime

from prometheus_client import Gauge

from activities.metrics.cluster_state import quantities_as_numbers
from activities.metrics.condition_readings import Key, Reading, condition_gauges, read_conditions, transitions
from activities.metrics.labels import node_labels, seconds_since
from activities.metrics.registry import Metrics
from activities.nodepool_status import pool_resources
from apis import labels
from cloudprovider.types import CloudProvider
from kube import resources as r
from kube.types import Obj
from kube.watch_cache import WatchCache
from scheduling import drain
from scheduling.constraints.resources import pod_requests

log = logging.getLogger(__name__)
REFRESH_SECONDS = 10.0
OFFERINGS_REFRESH_SECONDS = 60.0

Series = dict[tuple[str, ...], float]
# node_series' requests and limits, each the name of a `Metrics` gauge after `nodes_total_`.
_NODE_TOTALS = ("pod_requests", "pod_limits", "daemon_requests", "daemon_limits")


def _labels(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _pool(obj: Obj) -> str:
    return str(_labels(obj).get(labels.NODEPOOL, ""))


def cluster_series(nodes: list[Obj], claims: list[Obj], pools: list[Obj]) -> tuple[Series, Series, Series]:
    """(allocatable by (node, pool, resource, *NODE_LABELS), usage by (pool, resource), limit by (pool,
    resource)) of these objects. Pure. Nodes without the NodePool label (not nodeflow's) are not counted."""
    allocatable: Series = {}
    for node in nodes:
        pool = _pool(node)
        if not pool:
            continue
        name = str(node["metadata"].get("name", ""))
        well_known = tuple(node_labels(_labels(node)).values())
        for resource, value in quantities_as_numbers((node.get("status") or {}).get("allocatable") or {}).items():
            allocatable[(name, pool, resource, *well_known)] = value
    usage: Series = {}
    for pool, (resources, _count) in pool_resources(nodes, claims).items():
        for resource, value in quantities_as_numbers(resources).items():
            usage[(pool, resource)] = value
    limit: Series = {}
    for obj in pools:
        pool = str(obj["metadata"].get("name", ""))
        for resource, value in quantities_as_numbers((obj.get("spec") or {}).get("limits") or {}).items():
            limit[(pool, resource)] = value
    return allocatable, usage, limit


def _base_units(resources: Mapping[str, int]) -> dict[str, float]:
    """Canonical units (apis.values.quantity.to_units: cpu in millicores) as base units (cpu in cores)."""
    return {name: value / 1000 if name == "cpu" else float(value) for name, value in resources.items()}


def _limits(spec: Obj) -> dict[str, float]:
    """A pod's effective limits in base units, as its requests are reckoned (scheduling.constraints.resources): the
    containers' limits summed, the largest init container's when larger, pod-level limits when set; no
    overhead and no `pods` count."""
    only_limits = {
        "initContainers": [
            {
                "restartPolicy": c.get("restartPolicy"),
                "resources": {"limits": (c.get("resources") or {}).get("limits") or {}},
            }
            for c in spec.get("initContainers") or []
        ],
        "containers": [
            {"resources": {"limits": (c.get("resources") or {}).get("limits") or {}}}
            for c in spec.get("containers") or []
        ],
        "resources": {"limits": (spec.get("resources") or {}).get("limits") or {}},
    }
    limits = pod_requests(only_limits)
    limits.pop("pods", None)
    return _base_units(limits)


def _add(into: dict[str, float], more: Mapping[str, float]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0.0) + value


def node_series(nodes: list[Obj], pods: list[Obj], now: datetime) -> dict[str, Series]:
    """The per-node gauges of nodeflow's nodes (those with the NodePool label), keyed like
    `karpenter_nodes_allocatable` (node, pool, resource, *NODE_LABELS): `pod_requests` and `pod_limits` of
    the pods bound to each node that have not finished, DaemonSet pods included; `daemon_requests` and
    `daemon_limits` of its DaemonSet pods alone; `overhead`, capacity minus allocatable; and `lifetime`,
    seconds since its creation, by (node, pool, *NODE_LABELS). Requests and limits are set for every
    resource the node has allocatable (0 when no pod asks for it) and every resource a pod asks for; a pod
    with a malformed quantity is left out. Pure."""
    ours = {str(n["metadata"].get("name", "")): n for n in nodes if _pool(n)}
    totals: dict[str, dict[str, dict[str, float]]] = {name: {key: {} for key in _NODE_TOTALS} for name in ours}
    for pod in pods:
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        if node_name not in totals or drain.is_terminal(pod):
            continue
        try:
            requests, limits = _base_units(pod_requests(pod.get("spec") or {})), _limits(pod.get("spec") or {})
        except ValueError:
            continue
        node_totals = totals[node_name]
        _add(node_totals["pod_requests"], requests)
        _add(node_totals["pod_limits"], limits)
        if drain.is_daemonset_pod(pod):
            _add(node_totals["daemon_requests"], requests)
            _add(node_totals["daemon_limits"], limits)
    out: dict[str, Series] = {key: {} for key in (*_NODE_TOTALS, "overhead", "lifetime")}
    for name, node in ours.items():
        well_known = tuple(node_labels(_labels(node)).values())
        pool = _pool(node)
        status = node.get("status") or {}
        allocatable = quantities_as_numbers(status.get("allocatable") or {})
        for key, values in totals[name].items():
            for resource in allocatable.keys() | values.keys():
                out[key][(name, pool, resource, *well_known)] = values.get(resource, 0.0)
        capacity = quantities_as_numbers(status.get("capacity") or {})
        for resource in capacity.keys() & allocatable.keys():
            out["overhead"][(name, pool, resource, *well_known)] = max(0.0, capacity[resource] - allocatable[resource])
        lifetime = seconds_since(node["metadata"].get("creationTimestamp"), now)
        if lifetime is not None:
            out["lifetime"][(name, pool, *well_known)] = lifetime
    return out


def utilization_series(allocatable: Series, pod_requests: Series) -> Series:
    """`karpenter_cluster_utilization_percent` by (resource,): the pod requests on the nodes as a percentage
    of their allocatable, for each resource they have some of; both keyed like `karpenter_nodes_allocatable`.
    Pure."""
    available: dict[str, float] = {}
    requested: dict[str, float] = {}
    for key, value in allocatable.items():
        available[key[2]] = available.get(key[2], 0.0) + value
    for key, value in pod_requests.items():
        requested[key[2]] = requested.get(key[2], 0.0) + value
    return {
        (resource,): 100.0 * requested.get(resource, 0.0) / total for resource, total in available.items() if total > 0
    }


def pod_series(pods: list[Obj], nodes: list[Obj]) -> Series:
    """`karpenter_pods_state` of these pods (value 1), by (name, namespace, owner, node, nodepool, zone, arch,
    capacity type, instance type, phase): the owner's self link (`owner_link`), where the pod runs from its
    Node's labels ('' when unbound). Pure."""
    by_name = {str(n["metadata"].get("name", "")): _labels(n) for n in nodes}
    series: Series = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        where = node_labels(by_name.get(node, {}))
        owners = meta.get("ownerReferences") or []
        key = (
            str(meta.get("name", "")),
            str(meta.get("namespace", "")),
            owner_link(owners[0], str(meta.get("namespace", ""))) if owners else "",
            node,
            str(by_name.get(node, {}).get(labels.NODEPOOL, "")),
            where["zone"],
            where["arch"],
            where["capacity_type"],
            where["instance_type"],
            str((pod.get("status") or {}).get("phase") or ""),
        )
        series[key] = 1.0
    return series


def owner_link(owner: Obj, namespace: str) -> str:
    """A pod's owner as Karpenter's `owner` label names it, the self link Kubernetes no longer serves:
    `/apis/<apiVersion>/namespaces/<namespace>/<kind, lowercase>s/<name>`."""
    kind = str(owner.get("kind", "")).lower()
    return f"/apis/{owner.get('apiVersion', '')}/namespaces/{namespace}/{kind}s/{owner.get('name', '')}"


def waiting_series(pods: list[Obj], now: datetime, seen_pending: set[str]) -> tuple[Series, Series, set[str]]:
    """Karpenter's gauges of pods still waiting, each by (name, namespace), in seconds since the pod's creation:
    `unbound`, each Pending pod whose PodScheduled condition is not True; `unstarted`, each Pending pod, and
    each pod seen Pending before (`seen_pending`, uids) that has been neither Ready nor ended since. Returns
    both with the uids to pass as `seen_pending` next time. A pod never seen Pending (running before the
    leader started) is not timed. Pure."""
    unbound: Series = {}
    unstarted: Series = {}
    still_pending: set[str] = set()
    for pod in pods:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        age = seconds_since(meta.get("creationTimestamp"), now)
        phase = (pod.get("status") or {}).get("phase")
        if age is None or drain.is_terminal(pod) or _condition_time(pod, "Ready") is not None:
            continue
        key = (str(meta.get("name", "")), str(meta.get("namespace", "")))
        if phase == "Pending":
            still_pending.add(uid)
            unstarted[key] = age
            if _condition_time(pod, "PodScheduled") is None:
                unbound[key] = age
        elif uid in seen_pending:
            still_pending.add(uid)
            unstarted[key] = age
    return unbound, unstarted, still_pending


def _condition_time(pod: Obj, type_: str) -> str | None:
    """When the pod's condition `type_` turned True, if it is True and says so."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_ and cond.get("status") == "True":
            return cond.get("lastTransitionTime") or None
    return None


def _elapsed(start: str | None, end: str | None, now: datetime) -> float | None:
    """Seconds from `start` to `end` (to `now` when `end` is None or does not parse)."""
    began = seconds_since(start, now)
    if began is None:
        return None
    ended = seconds_since(end, now) if end else None
    return max(0.0, began - (ended or 0.0))


class ClusterStateMetrics:
    """Publishes the cluster-state gauges of `metrics` from `cluster`, the leader's watch cache, which must
    keep Nodes, NodeClaims, NodePools, Pods and EC2NodeClasses (see the module docstring). `run(stop)`
    until `stop` is set; `refresh()` once."""

    def __init__(
        self,
        cluster: WatchCache,
        metrics: Metrics,
        cloud: CloudProvider | None = None,
        interval: float = REFRESH_SECONDS,
        offerings_interval: float = OFFERINGS_REFRESH_SECONDS,
    ) -> None:
        self.cluster = cluster
        self.metrics = metrics
        self.cloud = cloud
        self.interval = interval
        self.offerings_interval = offerings_interval
        self.started = datetime.now(UTC)
        self._published: dict[str, set[tuple[str, ...]]] = {}
        self._offerings_read: float | None = None
        self._bound: set[str] = set()  # uids of the pods timed so far
        self._started: set[str] = set()
        self._pending: set[str] = set()  # uids of the pods seen Pending and not started yet
        self._conditions: dict[str, dict[Key, Reading]] = {}  # by kind: the status conditions read last
        self._unsynced_since: float | None = None  # monotonic time of the first refresh that found it unsynced

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    self.refresh()
                except Exception:
                    log.exception("publishing the cluster-state metrics failed; retrying in %gs", self.interval)
                stop.wait(self.interval)
        finally:
            self.clear()

    def refresh(self) -> bool:
        """Set every gauge from the cache; False, with `karpenter_cluster_state_synced` 0 and nothing else
        set, while a watch has not listed yet."""
        m = self.metrics
        if not self.cluster.synced:
            now = time.monotonic()
            self._unsynced_since = self._unsynced_since if self._unsynced_since is not None else now
            m.cluster_state_synced.set(0)
            m.cluster_state_unsynced_time.set(now - self._unsynced_since)
            return False
        self._unsynced_since = None
        m.cluster_state_unsynced_time.set(0)
        nodes = self.cluster.list(r.NODE)
        claims = self.cluster.list(r.NODECLAIM)
        pools = self.cluster.list(r.NODEPOOL)
        pods = self.cluster.list(r.POD)
        classes = self.cluster.list(r.EC2NODECLASS)
        m.cluster_state_synced.set(1)
        allocatable, usage, limit = cluster_series(nodes, claims, pools)
        self._publish("allocatable", m.nodes_allocatable, allocatable)
        per_node = node_series(nodes, pods, datetime.now(UTC))
        for key in _NODE_TOTALS:
            self._publish(key, getattr(m, f"nodes_total_{key}"), per_node[key])
        self._publish("overhead", m.nodes_system_overhead, per_node["overhead"])
        self._publish("lifetime", m.nodes_current_lifetime, per_node["lifetime"])
        self._publish("utilization", m.cluster_utilization, utilization_series(allocatable, per_node["pod_requests"]))
        m.cluster_state_node_count.set(sum(1 for node in nodes if _pool(node)))
        ours = [node for node in nodes if _pool(node)]
        for kind, objects in (("nodeclaim", claims), ("nodepool", pools), ("node", ours), ("ec2nodeclass", classes)):
            self._publish_conditions(kind, objects)
        self._publish("usage", m.nodepools_usage, usage)
        self._publish("limit", m.nodepools_limit, limit)
        self._publish("pods", m.pods_state, pod_series(pods, nodes))
        self._time_pods(pods)
        unbound, unstarted, self._pending = waiting_series(pods, datetime.now(UTC), self._pending)
        self._publish("unbound", m.pods_unbound_time, unbound)
        self._publish("unstarted", m.pods_unstarted_time, unstarted)
        due = self._offerings_read is None or time.monotonic() - self._offerings_read >= self.offerings_interval
        if self.cloud is not None and due:
            self._offerings_read = time.monotonic()
            m.catalog.show(self.cloud.instance_types(None))
        return True

    def _time_pods(self, pods: list[Obj]) -> None:
        """Observe the start-up histograms of pods created since this publisher started, once each."""
        now = datetime.now(UTC)
        present: set[str] = set()
        for pod in pods:
            meta = pod.get("metadata") or {}
            uid, created = str(meta.get("uid") or ""), meta.get("creationTimestamp")
            since = seconds_since(created, now)
            if not uid or since is None or since > (now - self.started).total_seconds():
                continue
            present.add(uid)
            if uid not in self._bound and (pod.get("spec") or {}).get("nodeName"):
                self._bound.add(uid)
                bound = _elapsed(created, _condition_time(pod, "PodScheduled"), now)
                if bound is not None:
                    self.metrics.pods_bound_duration.observe(bound)
            if uid not in self._started and (pod.get("status") or {}).get("phase") == "Running":
                self._started.add(uid)
                running = _elapsed(created, _condition_time(pod, "Ready"), now)
                if running is not None:
                    self.metrics.pods_startup_duration.observe(running)
        self._bound &= present
        self._started &= present

    def clear(self) -> None:
        """Remove every series this publisher set."""
        m = self.metrics
        for gauge in (
            m.nodes_allocatable,
            m.nodes_total_pod_requests,
            m.nodes_total_pod_limits,
            m.nodes_total_daemon_requests,
            m.nodes_total_daemon_limits,
            m.nodes_system_overhead,
            m.nodes_current_lifetime,
            m.cluster_utilization,
            m.nodepools_usage,
            m.nodepools_limit,
            m.pods_state,
            m.pods_unbound_time,
            m.pods_unstarted_time,
        ):
            gauge.clear()
        m.catalog.clear()
        for conditions in m.conditions.values():
            for gauge in conditions.gauges():
                gauge.clear()
        m.cluster_state_node_count.set(0)
        m.cluster_state_synced.set(0)
        m.cluster_state_unsynced_time.set(0)
        self._unsynced_since = None
        self._published.clear()
        self._conditions.clear()
        self._pending.clear()
        self._offerings_read = None

    def _publish_conditions(self, kind: str, objects: list[Obj]) -> None:
        """The status-condition metrics of `kind` (activities.metrics.condition_readings) from these objects."""
        metrics = self.metrics.conditions[kind]
        now = datetime.now(UTC)
        readings = read_conditions(objects)
        count, current = condition_gauges(readings, now)
        self._publish(f"{kind}_condition_count", metrics.count, count)
        self._publish(f"{kind}_condition_seconds", metrics.current_status_seconds, current)
        for change in transitions(self._conditions.get(kind, {}), readings, now):
            metrics.transitions.labels(type=change.type, status=change.status, reason=change.reason).inc()
            if change.held is not None:
                histogram = metrics.transition_seconds.labels(type=change.type, status=change.status,
                                                              to_status=change.to_status)  # fmt: skip
                histogram.observe(change.held)
        self._conditions[kind] = readings

    def _publish(self, key: str, gauge: Gauge, series: Series) -> None:
        """Set each series, then remove the ones set last time and absent now (no scrape sees a gap)."""
        for label_values, value in series.items():
            gauge.labels(*label_values).set(value)
        for gone in self._published.get(key, set()) - series.keys():
            gauge.remove(*gone)
        self._published[key] = set(series)
