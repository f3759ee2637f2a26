"""Karpenter's Prometheus metrics, with Karpenter's names, types and labels where nodeflow means the same
thing (Karpenter's reference, "Metrics"), on one `Metrics` object per worker.

The composition root (workers.worker) builds one `Metrics` on a registry, hands it to the activities, the
metered cloud provider (`MeteredCloudProvider`), the interruption consumer and the leader's cluster-state
gauges (workers.cluster_metrics), and serves the registry on `/metrics` (workers.metrics_server). Tests
build their own on a fresh registry and read it with `registry.get_sample_value`. Nothing here is global:
two workers in one process (the tests) keep separate counts.

Label cardinality is Karpenter's: counters and histograms are labelled by NodePool, capacity type,
reason, method, response code or error type, never by node, pod or NodeClaim; only the cluster-state gauges
`karpenter_nodes_*` (per node) and `karpenter_pods_state` (per pod) name them, as Karpenter's do,
and the offering gauges name each instance type, zone and capacity type. Counters count what this worker
did since it started, so a fleet's total is the sum over replicas (Prometheus `sum by (nodepool)`); the
cluster-state gauges are the leader's alone (workers.cluster_metrics), as are the disruption controller's
(one controller workflow decides at a time).

Where the work happens: the NodeClaim lifecycle activities count creations, terminations, drains and time
each phase (from the NodeClaim's timestamps, so a retried activity or another replica measures the same
span; each is observed by the call that makes the transition, once); the provisioning and disruption
activities time their simulations; the metered cloud provider times every call; the interruption consumer
counts messages. Never workflow code: a replay would count again.

Counters carry no `_created` series (the Go client Karpenter uses has none): importing this module turns
them off in prometheus-client for the process.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from temporalio import activity

from apis import labels
from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from cloudprovider.types import CloudProvider, Instance, LaunchRequest, ResolvedNodeClass

disable_created_metrics()

T = TypeVar("T")
PROVIDER = "aws"
# Seconds; from a few milliseconds (a cached catalog read) to the two minutes of a slow scheduling round.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
# Requests per batch, from a lone launch to the CreateFleet batcher's cap (cloudprovider.aws.fleet_batcher).
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000)
# Seconds; from a launch in seconds to a drain held by a PodDisruptionBudget for an hour.
LIFECYCLE_BUCKETS = (1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0, 1800.0, 3600.0)
# Seconds; a node's life, from minutes (consolidated) to weeks (expireAfter's default is 720h).
LIFETIME_BUCKETS = tuple(float(h * 3600) for h in (0.25, 0.5, 1, 2, 4, 8, 12, 24, 48, 96, 168, 336, 720))
# The node's well-known labels on `karpenter_nodes_allocatable` and `karpenter_pods_state`, by label name.
NODE_LABELS = ("instance_type", "capacity_type", "zone", "arch", "os")
OFFERING_LABELS = ["instance_type", "capacity_type", "zone"]
# The kinds of object whose status conditions Karpenter's operator metrics describe, as its names spell them.
CONDITION_KINDS = ("nodeclaim", "nodepool", "node", "ec2nodeclass")
# Seconds a status condition held, from a launch's seconds to a node's weeks.
CONDITION_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
                     604800.0)  # fmt: skip
PROVISIONED = "provisioned"  # karpenter_nodeclaims_created_total's reason for a claim provisioning made

# What nodeflow's CloudProvider methods are called in Karpenter's `method` label; nodeflow's own methods
# (no Karpenter counterpart) keep a name of the same form.
CLOUD_METHODS = {
    "create": "Create",
    "get": "Get",
    "list": "List",
    "delete": "Delete",
    "instance_types": "GetInstanceTypes",
    "find_by_node_claim": "FindByNodeClaim",
    "resolve_node_class": "ResolveNodeClass",
}


class ConditionMetrics:
    """The status-condition metrics of one kind of object (`kind`: one of CONDITION_KINDS), named as
    Karpenter's operator exports them (`operator_<kind>_status_condition_*`): per object and condition its
    `count` (1) and `current_status_seconds`; per condition type its `transitions` and
    `transition_seconds` (how long the status it left had held)."""

    def __init__(self, kind: str, registry: CollectorRegistry) -> None:
        prefix = f"operator_{kind}_status_condition"
        per_object = ["namespace", "name", "type", "status", "reason"]
        self.count = Gauge(
            f"{prefix}_count",
            "The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0",
            per_object,
            registry=registry,
        )
        self.current_status_seconds = Gauge(
            f"{prefix}_current_status_seconds",
            "The current amount of time in seconds that a status condition has been in a specific state.",
            per_object,
            registry=registry,
        )
        self.transitions = Counter(
            f"{prefix}_transitions",
            "The count of transitions of a given object, type and status (the status left, and its reason).",
            ["type", "status", "reason"],
            registry=registry,
        )
        self.transition_seconds = Histogram(
            f"{prefix}_transition_seconds",
            "The amount of time a condition was in a given state (status) before transitioning to another state "
            "(to_status).",
            ["type", "status", "to_status"],
            buckets=CONDITION_BUCKETS,
            registry=registry,
        )

    def gauges(self) -> tuple[Gauge, Gauge]:
        return self.count, self.current_status_seconds


class Metrics:
    """Every metric nodeflow exports, registered on `registry` (a new one when not given)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        reg = self.registry
        # prometheus-client adds `_total` to a counter's name itself.
        self.nodeclaims_created = Counter(
            "karpenter_nodeclaims_created",
            "Number of nodeclaims created in total by nodeflow. Labeled by reason the nodeclaim was created and "
            "the owning nodepool.",
            ["reason", "nodepool"],
            registry=reg,
        )
        self.nodeclaims_terminated = Counter(
            "karpenter_nodeclaims_terminated",
            "Number of nodeclaims terminated in total by nodeflow. Labeled by the owning nodepool and capacity type.",
            ["nodepool", "capacity_type"],
            registry=reg,
        )
        self.nodeclaims_disrupted = Counter(
            "karpenter_nodeclaims_disrupted",
            "Number of nodeclaims disrupted in total by nodeflow. Labeled by reason the nodeclaim was disrupted, "
            "the owning nodepool and capacity type.",
            ["reason", "nodepool", "capacity_type"],
            registry=reg,
        )
        self.nodeclaims_termination_duration = Histogram(
            "karpenter_nodeclaims_termination_duration_seconds",
            "Duration of NodeClaim termination in seconds: from its deletion until its finalizer is removed. "
            "Labeled by the owning nodepool.",
            ["nodepool"],
            buckets=LIFECYCLE_BUCKETS,
            registry=reg,
        )
        self.nodeclaims_instance_termination_duration = Histogram(
            "karpenter_nodeclaims_instance_termination_duration_seconds",
            "Duration of CloudProvider Instance termination in seconds: from the terminate request until the "
            "NodeClaim is finalized. Labeled by the owning nodepool.",
            ["nodepool"],
            buckets=LIFECYCLE_BUCKETS,
            registry=reg,
        )
        # No Karpenter counterpart (Karpenter times condition transitions in its operator's status metrics):
        # nodeflow's own namespace, so no name suggests a Karpenter meaning it does not have.
        self.nodeclaims_startup_duration = Histogram(
            "nodeflow_nodeclaims_startup_duration_seconds",
            "Time from a NodeClaim's creation until its condition turned True, for the conditions Launched, "
            "Registered and Initialized. Labeled by the condition and the owning nodepool.",
            ["condition", "nodepool"],
            buckets=LIFECYCLE_BUCKETS,
            registry=reg,
        )
        self.nodes_created = Counter(
            "karpenter_nodes_created",
            "Number of nodes created in total by nodeflow (counted when the node registers). Labeled by owning "
            "nodepool.",
            ["nodepool"],
            registry=reg,
        )
        self.nodes_terminated = Counter(
            "karpenter_nodes_terminated",
            "Number of nodes terminated in total by nodeflow. Labeled by owning nodepool.",
            ["nodepool"],
            registry=reg,
        )
        self.nodes_drained = Counter(
            "karpenter_nodes_drained",
            "The number of nodes drained by nodeflow. Labeled by owning nodepool.",
            ["nodepool"],
            registry=reg,
        )
        self.nodes_termination_duration = Histogram(
            "karpenter_nodes_termination_duration_seconds",
            "The time taken between a node's deletion request (its own, or its NodeClaim's when that came first) "
            "and the removal of its finalizer. Labeled by owning nodepool.",
            ["nodepool"],
            buckets=LIFECYCLE_BUCKETS,
            registry=reg,
        )
        self.nodes_lifetime_duration = Histogram(
            "karpenter_nodes_lifetime_duration_seconds",
            "The lifetime duration of the nodes since creation. Labeled by owning nodepool.",
            ["nodepool"],
            buckets=LIFETIME_BUCKETS,
            registry=reg,
        )
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
        self.nodepools_allowed_disruptions = Gauge(
            "karpenter_nodepools_allowed_disruptions",
            "The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. "
            "Labeled by nodepool and reason.",
            ["nodepool", "reason"],
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
        self.pods_drained = Counter(
            "karpenter_pods_drained",
            "The total number of pods drained during node termination by nodeflow (evicted, or deleted once the "
            "terminationGracePeriod is over), labeled by reason: the NodeClaim's disruption reason, or "
            "`Forceful Termination`.",
            ["reason"],
            registry=reg,
        )
        self.pods_eviction_requests = Counter(
            "karpenter_pods_eviction_requests",
            "The total number of pod eviction requests made by nodeflow, labeled by the HTTP response code of the "
            "Eviction API.",
            ["code"],
            registry=reg,
        )
        self.pods_startup_duration = Histogram(
            "karpenter_pods_startup_duration_seconds",
            "The time from pod creation until the pod is running.",
            buckets=LIFECYCLE_BUCKETS,
            registry=reg,
        )
        self.pods_bound_duration = Histogram(
            "karpenter_pods_bound_duration_seconds",
            "The time from pod creation until the pod is bound.",
            buckets=LIFECYCLE_BUCKETS,
            registry=reg,
        )
        self.scheduling_duration = Histogram(
            "karpenter_scheduler_scheduling_duration_seconds",
            "Duration of scheduling simulations used for deprovisioning and provisioning in seconds. Labeled by "
            "controller.",
            ["controller"],
            buckets=DURATION_BUCKETS,
            registry=reg,
        )
        self.scheduling_queue_depth = Gauge(
            "karpenter_scheduler_queue_depth",
            "The number of pods the scheduling simulation running now is placing (0 between rounds). Labeled by "
            "controller.",
            ["controller"],
            registry=reg,
        )
        self.unschedulable_pods = Gauge(
            "karpenter_scheduler_unschedulable_pods_count",
            "The number of pods the last scheduling simulation could not schedule. Labeled by controller.",
            ["controller"],
            registry=reg,
        )
        self.cloudprovider_duration = Histogram(
            "karpenter_cloudprovider_duration_seconds",
            "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
            ["controller", "method", "provider"],
            buckets=DURATION_BUCKETS,
            registry=reg,
        )
        self.cloudprovider_errors = Counter(
            "karpenter_cloudprovider_errors",
            "Total number of errors returned from CloudProvider calls. Labeled by the controller, method name, "
            "provider and error type.",
            ["controller", "method", "provider", "error"],
            registry=reg,
        )
        self.batcher_batch_size = Histogram(
            "karpenter_cloudprovider_batcher_batch_size",
            "Size of the request batch per batcher. Labeled by the batcher (create_fleet: launches sent as one "
            "CreateFleet).",
            ["batcher"],
            buckets=BATCH_SIZE_BUCKETS,
            registry=reg,
        )
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
        self.disruption_decisions = Counter(
            "karpenter_voluntary_disruption_decisions",
            "Number of disruption decisions performed. Labeled by disruption decision, reason and consolidation type.",
            ["decision", "reason", "consolidation_type"],
            registry=reg,
        )
        self.disruption_eligible_nodes = Gauge(
            "karpenter_voluntary_disruption_eligible_nodes",
            "Number of nodes eligible for disruption by nodeflow. Labeled by disruption reason.",
            ["reason"],
            registry=reg,
        )
        self.disruption_evaluation_duration = Histogram(
            "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
            "Duration of the disruption decision evaluation process in seconds. Labeled by method and consolidation "
            "type (nodeflow evaluates every method in one pass: method `all`).",
            ["method", "consolidation_type"],
            buckets=DURATION_BUCKETS,
            registry=reg,
        )
        self.consolidation_timeouts = Counter(
            "karpenter_voluntary_disruption_consolidation_timeouts",
            "Number of times the consolidation algorithm has reached a timeout. Labeled by consolidation type.",
            ["consolidation_type"],
            registry=reg,
        )
        self.interruption_received = Counter(
            "karpenter_interruption_received_messages",
            "Count of messages received from the interruption queue. Broken down by message type.",
            ["message_type"],
            registry=reg,
        )
        self.interruption_deleted = Counter(
            "karpenter_interruption_deleted_messages",
            "Count of messages deleted from the interruption queue.",
            registry=reg,
        )
        self.interruption_queue_duration = Histogram(
            "karpenter_interruption_message_queue_duration_seconds",
            "Amount of time an interruption message is on the queue before it is handled: from the event's "
            "time until its message is deleted.",
            buckets=DURATION_BUCKETS,
            registry=reg,
        )

        self.conditions = {kind: ConditionMetrics(kind, reg) for kind in CONDITION_KINDS}

    def fleet_batch(self, size: int) -> None:
        """One CreateFleet batch of `size` launches was sent."""
        self.batcher_batch_size.labels(batcher="create_fleet").observe(size)

    @contextmanager
    def scheduling(self, controller: str, pods: int) -> Iterator[None]:
        """Time one scheduling simulation of `pods` pods (the duration histogram), the queue depth showing
        `pods` while it runs."""
        depth = self.scheduling_queue_depth.labels(controller=controller)
        depth.set(pods)
        try:
            with self.scheduling_duration.labels(controller=controller).time():
                yield
        finally:
            depth.set(0)


def owner_labels(obj_labels: Mapping[str, str]) -> dict[str, str]:
    """`nodepool` and `capacity_type` label values of a NodeClaim or Node with these labels ('' unknown)."""
    return {
        "nodepool": obj_labels.get(labels.NODEPOOL, ""),
        "capacity_type": obj_labels.get(labels.CAPACITY_TYPE, ""),
    }


def node_labels(obj_labels: Mapping[str, str]) -> dict[str, str]:
    """The NODE_LABELS values of a Node with these labels ('' for each it lacks)."""
    keys = (labels.INSTANCE_TYPE, labels.CAPACITY_TYPE, labels.ZONE, labels.ARCH, labels.OS)
    return {name: obj_labels.get(key, "") for name, key in zip(NODE_LABELS, keys, strict=True)}


def seconds_since(stamp: str | datetime | None, now: datetime | None = None) -> float | None:
    """Seconds from `stamp` (RFC 3339 as Kubernetes writes it, or a datetime) to `now` (default: the
    current time), never negative; None when there is no stamp or it does not parse."""
    if not stamp:
        return None
    try:
        when = stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())


def disruption_reason(reason: str) -> str:
    """A disruption reason as Karpenter's `reason` label has it: lowercase (`Underutilized` -> `underutilized`)."""
    return reason.lower()


def _controller() -> str:
    """The caller, for the `controller` label: the Temporal activity type when called in an activity (`launch`,
    `solve`, `terminate_instance`, ...), else `worker` (the worker's own start-up reads)."""
    return activity.info().activity_type if activity.in_activity() else "worker"


class MeteredCloudProvider:
    """`cloud` with every CloudProvider call timed (`karpenter_cloudprovider_duration_seconds`) and every
    error counted by its type (`karpenter_cloudprovider_errors_total`), as Karpenter decorates its cloud
    provider. Expected outcomes raised as errors (InsufficientCapacityError, InstanceNotFoundError) count
    as errors, as in Karpenter. Other attributes of `cloud` pass through."""

    def __init__(self, cloud: CloudProvider, metrics: Metrics, provider: str = PROVIDER) -> None:
        self._cloud = cloud
        self._metrics = metrics
        self._provider = provider

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cloud, name)

    def _call(self, name: str, fn: Callable[[], T]) -> T:
        labels = {"controller": _controller(), "method": CLOUD_METHODS[name], "provider": self._provider}
        start = time.perf_counter()
        try:
            return fn()
        except Exception as err:
            self._metrics.cloudprovider_errors.labels(**labels, error=type(err).__name__).inc()
            raise
        finally:
            self._metrics.cloudprovider_duration.labels(**labels).observe(time.perf_counter() - start)

    def create(self, request: LaunchRequest) -> Instance:
        return self._call("create", lambda: self._cloud.create(request))

    def get(self, instance_id: str) -> Instance:
        return self._call("get", lambda: self._cloud.get(instance_id))

    def find_by_node_claim(self, node_claim_name: str) -> Instance | None:
        return self._call("find_by_node_claim", lambda: self._cloud.find_by_node_claim(node_claim_name))

    def list(self) -> list[Instance]:
        return self._call("list", self._cloud.list)

    def delete(self, instance_id: str) -> None:
        self._call("delete", lambda: self._cloud.delete(instance_id))

    def instance_types(self, node_class: EC2NodeClass | None) -> builtins.list[InstanceType]:
        return self._call("instance_types", lambda: self._cloud.instance_types(node_class))

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        return self._call("resolve_node_class", lambda: self._cloud.resolve_node_class(node_class))
