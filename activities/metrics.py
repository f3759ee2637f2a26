"""Karpenter's Prometheus metrics, with Karpenter's names, types and labels where nodeflow means the same
thing (Karpenter's reference, "Metrics"), on one `Metrics` object per worker.

The composition root (workers.worker) builds one `Metrics` on a registry, hands it to the activities, the
metered cloud provider (`MeteredCloudProvider`), the interruption consumer and the leader's cluster-state
gauges (workers.cluster_metrics), and serves the registry on `/metrics` (workers.metrics_server). Tests
build their own on a fresh registry and read it with `registry.get_sample_value`. Nothing here is global:
two workers in one process (the tests) keep separate counts.

Label cardinality is Karpenter's: counters and histograms are labelled by NodePool, reason, method or
error type, never by node or NodeClaim; only the per-node gauge `karpenter_nodes_allocatable` names the
node, as Karpenter's does. Counters count what this worker did since it started, so a fleet's total is the
sum over replicas (Prometheus `sum by (nodepool)`); the cluster-state gauges are the leader's alone.

Counters carry no `_created` series (the Go client Karpenter uses has none): importing this module turns
them off in prometheus-client for the process.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from temporalio import activity

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
            "Number of nodeclaims terminated in total by nodeflow. Labeled by the owning nodepool.",
            ["nodepool"],
            registry=reg,
        )
        self.nodeclaims_disrupted = Counter(
            "karpenter_nodeclaims_disrupted",
            "Number of nodeclaims disrupted in total by nodeflow. Labeled by reason the nodeclaim was disrupted "
            "and the owning nodepool.",
            ["reason", "nodepool"],
            registry=reg,
        )
        self.nodes_allocatable = Gauge(
            "karpenter_nodes_allocatable",
            "Node allocatable are the resources allocatable by nodes. Labeled by node name, owning nodepool and "
            "resource type (cpu in cores, memory-like resources in bytes).",
            ["node_name", "nodepool", "resource_type"],
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
        self.scheduling_duration = Histogram(
            "karpenter_provisioner_scheduling_duration_seconds",
            "Duration of scheduling simulations used for provisioning in seconds. Labeled by controller.",
            ["controller"],
            buckets=DURATION_BUCKETS,
            registry=reg,
        )
        self.scheduling_queue_depth = Gauge(
            "karpenter_provisioner_scheduling_queue_depth",
            "The number of pods the scheduling simulation running now is placing (0 between rounds). Labeled by "
            "controller.",
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
