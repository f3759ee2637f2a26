"""Karpenter's Prometheus metrics, with Karpenter's names, types and labels where nodeflow means the same
thing (Karpenter's reference, "Metrics"), on one `Metrics` object per worker.

The composition root (workers.worker) builds one `Metrics` on a registry, hands it to the activities, the
metered cloud provider (activities.metrics.metered_cloud), the interruption consumer and the leader's cluster-state
gauges (activities.metrics.cluster_refresh), and serves the registry on `/metrics` (workers.metrics_server). Tests
build their own on a fresh registry and read it with `registry.get_sample_value`. Nothing here is global:
two workers in one process (the tests) keep separate counts.

Label cardinality is Karpenter's: counters and histograms are labelled by NodePool, capacity type,
reason, method, response code or error type, never by node, pod or NodeClaim; only the cluster-state gauges
`karpenter_nodes_*` (per node), `karpenter_pods_state` (per pod) and `karpenter_pods_unbound_time_seconds`
and `_unstarted_time_seconds` (per waiting pod) name them, as Karpenter's do,
and the offering gauges name each instance type, zone and capacity type. Counters count what this worker
did since it started, so a fleet's total is the sum over replicas (Prometheus `sum by (nodepool)`); the
cluster-state gauges are the leader's alone (activities.metrics.cluster_refresh), as are the disruption controller's
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

from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

from activities.metrics.cluster_state import ClusterStateGauges
from activities.metrics.disruption import DisruptionMetrics
from activities.metrics.status_conditions import CONDITION_KINDS, ConditionMetrics
from activities.metrics.summary import WindowedSummary

disable_created_metrics()

# Seconds; from a few milliseconds (a cached catalog read) to the two minutes of a slow scheduling round.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
# Requests per batch, from a lone launch to the CreateFleet batcher's cap (cloudprovider.aws.launch.fleet_batcher).
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000)
# Seconds a batch's window is open: from a lone launch (the 35 ms idle window) to the 1 s cap.
BATCH_TIME_BUCKETS = (0.01, 0.025, 0.035, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5)
# Seconds; from a launch in seconds to a drain held by a PodDisruptionBudget for an hour.
LIFECYCLE_BUCKETS = (1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0, 1800.0, 3600.0)
# Seconds; a node's life, from minutes (consolidated) to weeks (expireAfter's default is 720h).
LIFETIME_BUCKETS = tuple(float(h * 3600) for h in (0.25, 0.5, 1, 2, 4, 8, 12, 24, 48, 96, 168, 336, 720))
PROVISIONED = "provisioned"  # karpenter_nodeclaims_created_total's reason for a claim provisioning made


class Metrics(ClusterStateGauges, DisruptionMetrics):
    """Every metric nodeflow exports, registered on `registry` (a new one when not given): the cluster-state
    gauges (activities.metrics.cluster_state), the disruption controller's (activities.metrics.disruption)
    and the counters and histograms of what the worker does."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        reg = self.registry
        ClusterStateGauges.__init__(self, reg)
        DisruptionMetrics.__init__(self, reg, DURATION_BUCKETS)
        self.build_info = Gauge(
            "karpenter_build_info",
            "A metric with a constant '1' value labeled by version from which nodeflow was built (goversion: the "
            "Python runtime, goarch: the architecture, commit: the source revision).",
            ["version", "goversion", "goarch", "commit"],
            registry=reg,
        )
        # prometheus-client adds `_total` to a counter's name itself.
        self.nodeclaims_created = Counter(
            "karpenter_nodeclaims_created",
            "Number of nodeclaims created in total by nodeflow. Labeled by reason the nodeclaim was created, "
            "the owning nodepool, and whether a minValues was relaxed to create it.",
            ["reason", "nodepool", "min_values_relaxed"],
            registry=reg,
        )
        self.nodeclaims_terminated = Counter(
            "karpenter_nodeclaims_terminated",
            "Number of nodeclaims terminated in total by nodeflow. Labeled by the owning nodepool, capacity type and "
            "zone.",
            ["nodepool", "capacity_type", "zone"],
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
            "nodepool and zone.",
            ["nodepool", "zone"],
            registry=reg,
        )
        self.nodes_terminated = Counter(
            "karpenter_nodes_terminated",
            "Number of nodes terminated in total by nodeflow. Labeled by owning nodepool and zone.",
            ["nodepool", "zone"],
            registry=reg,
        )
        self.nodes_drained = Counter(
            "karpenter_nodes_drained",
            "The number of nodes drained by nodeflow. Labeled by owning nodepool.",
            ["nodepool"],
            registry=reg,
        )
        self.nodes_termination_duration = WindowedSummary(  # a summary, as Karpenter's
            "karpenter_nodes_termination_duration_seconds",
            "The time taken between a node's deletion request (its own, or its NodeClaim's when that came first) "
            "and the removal of its finalizer. Labeled by owning nodepool.",
            ["nodepool"],
            registry=reg,
        )
        self.nodes_lifetime_duration = Histogram(
            "karpenter_nodes_lifetime_duration_seconds",
            "The lifetime duration of the nodes since creation. Labeled by owning nodepool.",
            ["nodepool"],
            buckets=LIFETIME_BUCKETS,
            registry=reg,
        )
        self.nodeclaims_unhealthy_disrupted = Counter(
            "karpenter_nodeclaims_unhealthy_disrupted",
            "Number of unhealthy nodeclaims disrupted in total by node repair. Labeled by the condition the node "
            "was disrupted on, the owning nodepool, the capacity type and the image ID.",
            ["condition", "nodepool", "capacity_type", "image_id"],
            registry=reg,
        )
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
        self.pods_startup_duration = WindowedSummary(  # a summary, as Karpenter's
            "karpenter_pods_startup_duration_seconds",
            "The time from pod creation until the pod is running.",
            registry=reg,
        )
        self.pods_bound_duration = Histogram(
            "karpenter_pods_bound_duration_seconds",
            "The time from pod creation until the pod is bound.",
            buckets=LIFECYCLE_BUCKETS,
            registry=reg,
        )
        self.pods_unbound_time = Gauge(
            "karpenter_pods_unbound_time_seconds",
            "The time from pod creation until the pod is bound, for each Pending pod not bound yet.",
            ["name", "namespace"],
            registry=reg,
        )
        self.pods_unstarted_time = Gauge(
            "karpenter_pods_unstarted_time_seconds",
            "The time from pod creation until the pod is running, for each pod seen Pending and not Ready yet.",
            ["name", "namespace"],
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
        self.ignored_pods = Gauge(
            "karpenter_scheduler_ignored_pods_count",
            "Number of pods ignored during scheduling by nodeflow: pending pods whose spec it cannot read, or "
            "whose PersistentVolumeClaims cannot be used yet (each says why in a FailedScheduling event).",
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
        self.instance_launch_failures = Counter(
            "karpenter_cloudprovider_instance_launch_failures",
            "Number of instance launch (CreateFleet offering) failures, dimensioned by availability zone, zone ID, "
            "capacity type, and launch failure reason (the EC2 error code).",
            ["zone", "zone_id", "capacity_type", "reason"],
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
        self.batcher_batch_time = Histogram(
            "karpenter_cloudprovider_batcher_batch_time_seconds",
            "Duration of the batching window per batcher. Labeled by the batcher (create_fleet: from the first "
            "launch of a CreateFleet batch until the batch closed).",
            ["batcher"],
            buckets=BATCH_TIME_BUCKETS,
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

    def launch_failure(self, zone: str, zone_id: str, capacity_type: str, reason: str) -> None:
        """One offering of a CreateFleet failed with EC2 error code `reason`."""
        self.instance_launch_failures.labels(zone=zone, zone_id=zone_id, capacity_type=capacity_type,
                                             reason=reason).inc()  # fmt: skip

    def fleet_batch(self, size: int, window: float) -> None:
        """One CreateFleet batch of `size` launches was sent, its window open `window` seconds."""
        self.batcher_batch_size.labels(batcher="create_fleet").observe(size)
        self.batcher_batch_time.labels(batcher="create_fleet").observe(window)

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
