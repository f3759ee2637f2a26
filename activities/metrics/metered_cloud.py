"""The cloud provider with Karpenter's cloud-provider metrics: every call timed
(`karpenter_cloudprovider_duration_seconds`) and every error counted (`karpenter_cloudprovider_errors_total`),
labelled by the calling controller, the method as Karpenter names it and the provider."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from typing import Any, TypeVar

from temporalio import activity

from activities.metrics.registry import Metrics
from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from cloudprovider.types import CloudProvider, Instance, LaunchRequest, ResolvedNodeClass

T = TypeVar("T")
PROVIDER = "aws"

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

    def name_instance(self, instance_id: str, name: str) -> None:
        self._call("name_instance", lambda: self._cloud.name_instance(instance_id, name))

    def instance_types(self, node_class: EC2NodeClass | None) -> builtins.list[InstanceType]:
        return self._call("instance_types", lambda: self._cloud.instance_types(node_class))

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        return self._call("resolve_node_class", lambda: self._cloud.resolve_node_class(node_class))
