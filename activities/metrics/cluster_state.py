"""The cluster-state gauges of Karpenter's metrics: per node (`karpenter_nodes_*`), per pod
(`karpenter_pods_state`), per NodePool usage and limits, the cluster's utilization and sync state, and the
catalog's offerings. The leader sets them from what it reads (activities.metrics.cluster_refresh); they are part of
the worker's one `Metrics` (activities.metrics.registry).

The catalog's gauges (`karpenter_cloudprovider_instance_type_*`) are rendered when scraped, from the
catalog the leader last showed (`CatalogGauges`): a region's catalog is about 10,000 offering series, and
setting each as a labelled gauge child cost the leader about 0.5 s of CPU when it started leading and again
every minute, whether or not anything scraped them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from activities.metrics.labels import NODE_LABELS
from apis.instancetype import InstanceType
from apis.values.quantity import parse_quantity

OFFERING_LABELS = ["instance_type", "capacity_type", "zone"]


class ClusterStateGauges:
    """The cluster-state gauges, registered on `reg`."""

    def __init__(self, reg: CollectorRegistry) -> None:
        self.nodes_allocatable = Gauge(
            "karpenter_nodes_allocatable",
            "Node allocatable are the resources allocatable by nodes. Labeled by node name, owning nodepool, "
            "resource type (cpu in cores, memory-like resources in bytes) and the node's instance type, capacity "
            "type, zone, arch and os.",
            ["node_name", "nodepool", "resource_type", *NODE_LABELS],
            registry=reg,
        )
        node_resource = ["node_name", "nodepool", "resource_type", *NODE_LABELS]
        self.nodes_total_pod_requests = Gauge(
            "karpenter_nodes_total_pod_requests",
            "Node total pod requests are the resources requested by pods bound to nodes, including the DaemonSet "
            "pods. Labeled as karpenter_nodes_allocatable.",
            node_resource,
            registry=reg,
        )
        self.nodes_total_pod_limits = Gauge(
            "karpenter_nodes_total_pod_limits",
            "Node total pod limits are the resources specified by pod limits, including the DaemonSet pods. "
            "Labeled as karpenter_nodes_allocatable.",
            node_resource,
            registry=reg,
        )
        self.nodes_total_daemon_requests = Gauge(
            "karpenter_nodes_total_daemon_requests",
            "Node total daemon requests are the resources requested by DaemonSet pods bound to nodes. Labeled as "
            "karpenter_nodes_allocatable.",
            node_resource,
            registry=reg,
        )
        self.nodes_total_daemon_limits = Gauge(
            "karpenter_nodes_total_daemon_limits",
            "Node total daemon limits are the resources specified by DaemonSet pod limits. Labeled as "
            "karpenter_nodes_allocatable.",
            node_resource,
            registry=reg,
        )
        self.nodes_system_overhead = Gauge(
            "karpenter_nodes_system_overhead",
            "Node system daemon overhead are the resources reserved for system overhead: the difference between "
            "the node's capacity and allocatable in its status. Labeled as karpenter_nodes_allocatable.",
            node_resource,
            registry=reg,
        )
        self.nodes_current_lifetime = Gauge(
            "karpenter_nodes_current_lifetime_seconds",
            "Node age in seconds. Labeled by node name, owning nodepool and the node's instance type, capacity "
            "type, zone, arch and os.",
            ["node_name", "nodepool", *NODE_LABELS],
            registry=reg,
        )
        self.cluster_state_node_count = Gauge(
            "karpenter_cluster_state_node_count",
            "Current count of nodeflow's nodes in the cluster state the leader read last (0 on a worker that "
            "does not lead).",
            registry=reg,
        )
        self.cluster_state_synced = Gauge(
            "karpenter_cluster_state_synced",
            "Returns 1 if cluster state is synced and 0 otherwise: the leader's last read of the cluster's "
            "nodes, NodeClaims, NodePools and pods succeeded (0 on a worker that does not lead).",
            registry=reg,
        )
        self.cluster_state_unsynced_time = Gauge(
            "karpenter_cluster_state_unsynced_time_seconds",
            "The time for which cluster state is not synced: seconds since the leader's refresh first found a watch "
            "not listed yet (0 once synced, and on a worker that does not lead).",
            registry=reg,
        )
        self.cluster_utilization = Gauge(
            "karpenter_cluster_utilization_percent",
            "Utilization of allocatable resources by pod requests, in percent, over nodeflow's nodes. Labeled by "
            "resource type.",
            ["resource_type"],
            registry=reg,
        )
        self.nodepools_usage = Gauge(
            "karpenter_nodepools_usage",
            "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and "
            "resource type.",
            ["nodepool", "resource_type"],
            registry=reg,
        )
        self.nodepools_limit = Gauge(
            "karpenter_nodepools_limit",
            "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by "
            "nodepool name and resource type.",
            ["nodepool", "resource_type"],
            registry=reg,
        )
        self.pods_state = Gauge(
            "karpenter_pods_state",
            "Pod state is the current state of pods. This metric can be used several ways as it is labeled by the "
            "pod name, namespace, owner, node, nodepool name, zone, architecture, capacity type, instance type and "
            "pod phase.",
            ["name", "namespace", "owner", "node", "nodepool", "zone", "arch", "capacity_type", "instance_type",
             "phase"],
            registry=reg,
        )  # fmt: skip
        self.catalog = CatalogGauges(reg)


OFFERING_AVAILABLE = (
    "karpenter_cloudprovider_instance_type_offering_available",
    "Instance type offering availability, based on instance type, capacity type, and zone (1 available, 0 not).",
)
OFFERING_PRICE = (
    "karpenter_cloudprovider_instance_type_offering_price_estimate",
    "Instance type offering estimated hourly price used when making informed decisions on node cost "
    "calculation, based on instance type, capacity type, and zone.",
)
TYPE_CPU = ("karpenter_cloudprovider_instance_type_cpu_cores", "VCPUs cores for a given instance type.")
TYPE_MEMORY = ("karpenter_cloudprovider_instance_type_memory_bytes", "Memory, in bytes, for a given instance type.")


def quantities_as_numbers(quantities: Mapping[str, object]) -> dict[str, float]:
    """Each quantity as a number in base units (cpu in cores); one that does not parse is left out."""
    out: dict[str, float] = {}
    for resource, quantity in quantities.items():
        try:
            out[resource] = float(parse_quantity(str(quantity)))
        except ValueError:
            continue
    return out


class CatalogGauges(Collector):
    """The catalog's gauges, registered on `reg`: `karpenter_cloudprovider_instance_type_offering_available`
    and `_price_estimate` by (instance type, capacity type, zone), `karpenter_cloudprovider_instance_type_
    cpu_cores` and `_memory_bytes` by instance type, from the types last given to `show` (none after
    `clear`). The families are built at the first scrape after a `show` and kept until the next: a region's
    catalog is thousands of series, shown once a minute and scraped more often. Thread-safe: `show` swaps
    one reference (two scrapes racing may both build the same families)."""

    def __init__(self, reg: CollectorRegistry) -> None:
        self._shown: tuple[tuple[InstanceType, ...], tuple[Metric, ...] | None] = ((), None)
        reg.register(self)

    def show(self, types: Iterable[InstanceType]) -> None:
        """Publish these types' offerings and capacities from now on, instead of the ones shown before."""
        self._shown = (tuple(types), None)

    def clear(self) -> None:
        """Publish no catalog series (the worker stopped leading)."""
        self._shown = ((), None)

    def describe(self) -> list[Metric]:
        return list(self._families(()))

    def collect(self) -> Sequence[Metric]:
        shown = self._shown
        types, families = shown
        if families is None:
            families = tuple(self._families(types))
            if self._shown is shown:  # not replaced meanwhile by a newer `show`
                self._shown = (types, families)
        return list(families)

    @staticmethod
    def _families(types: Iterable[InstanceType]) -> Iterable[Metric]:
        available = GaugeMetricFamily(*OFFERING_AVAILABLE, labels=OFFERING_LABELS)
        price = GaugeMetricFamily(*OFFERING_PRICE, labels=OFFERING_LABELS)
        cpu = GaugeMetricFamily(*TYPE_CPU, labels=["instance_type"])
        memory = GaugeMetricFamily(*TYPE_MEMORY, labels=["instance_type"])
        for it in types:
            for o in it.offerings:
                labels = [it.name, o.capacity_type, o.zone]
                available.add_metric(labels, 1.0 if o.available else 0.0)
                price.add_metric(labels, o.price)
            capacity = quantities_as_numbers(it.capacity)
            for family, resource in ((cpu, "cpu"), (memory, "memory")):
                if resource in capacity:
                    family.add_metric([it.name], capacity[resource])
        return (available, price, cpu, memory)
