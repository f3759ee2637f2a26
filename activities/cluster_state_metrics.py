"""The cluster-state gauges of Karpenter's metrics: per node (`karpenter_nodes_*`), per pod
(`karpenter_pods_state`), per NodePool usage and limits, the cluster's utilization and sync state, and the
catalog's offerings. The leader sets them from what it reads (workers.cluster_metrics); they are part of
the worker's one `Metrics` (activities.metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from activities.metric_labels import NODE_LABELS

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
        self.offering_available = Gauge(
            "karpenter_cloudprovider_instance_type_offering_available",
            "Instance type offering availability, based on instance type, capacity type, and zone (1 available, "
            "0 not).",
            OFFERING_LABELS,
            registry=reg,
        )
        self.offering_price_estimate = Gauge(
            "karpenter_cloudprovider_instance_type_offering_price_estimate",
            "Instance type offering estimated hourly price used when making informed decisions on node cost "
            "calculation, based on instance type, capacity type, and zone.",
            OFFERING_LABELS,
            registry=reg,
        )
        self.instance_type_cpu_cores = Gauge(
            "karpenter_cloudprovider_instance_type_cpu_cores",
            "VCPUs cores for a given instance type.",
            ["instance_type"],
            registry=reg,
        )
        self.instance_type_memory_bytes = Gauge(
            "karpenter_cloudprovider_instance_type_memory_bytes",
            "Memory, in bytes, for a given instance type.",
            ["instance_type"],
            registry=reg,
        )
