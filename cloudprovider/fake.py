"""FakeCloudProvider: the CloudProvider contract in memory, for unit tests of activities and workflows.

Same semantics as the AWS provider where callers can tell: adoption by claim tag, ClientToken idempotency,
the cheapest available offering wins (spot before on-demand when allowed), insufficient capacity per
offering (`set_insufficient_capacity`) with the unavailable-offerings cache, delete until
InstanceNotFoundError. Injected errors (`fail_next`) are raised by the next call of a method.
"""

from __future__ import annotations

import builtins
import itertools
import threading
from collections.abc import Iterable
from typing import Any

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType, Offering, eks_overhead
from cloudprovider.errors import (
    CloudProviderError,
    InstanceNotFoundError,
    InsufficientCapacityError,
    UnavailableOffering,
)
from cloudprovider.types import (
    TAG_CLUSTER_PREFIX,
    TAG_NAME,
    TAG_NODECLAIM,
    TAG_NODEPOOL,
    Instance,
    LaunchRequest,
    NodeClassResources,
    ResolvedNodeClass,
)
from cloudprovider.unavailable import UnavailableOfferings

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")


def fake_instance_type(
    name: str, cpu: int, memory_gib: int, price: float, arch: str = "amd64", pods: int = 110
) -> InstanceType:
    """A small catalog entry with on-demand and spot (35% of on-demand) offerings in three zones."""
    offerings = [
        Offering(zone=zone, capacity_type=ct, price=round(price * (0.35 if ct == "spot" else 1.0), 5))
        for zone in ZONES
        for ct in ("on-demand", "spot")
    ]
    return InstanceType(
        name=name,
        capacity={"cpu": str(cpu), "memory": f"{memory_gib}Gi", "pods": str(pods), "ephemeral-storage": "20Gi"},
        overhead=eks_overhead(cpu * 1000, pods),
        labels={"kubernetes.io/arch": arch, "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": name},
        offerings=offerings,
    )


def default_catalog() -> list[InstanceType]:
    return [
        fake_instance_type("c5.large", 2, 4, 0.085),
        fake_instance_type("c5.xlarge", 4, 8, 0.17),
        fake_instance_type("m5.large", 2, 8, 0.096),
        fake_instance_type("m5.xlarge", 4, 16, 0.192),
        fake_instance_type("m6g.large", 2, 8, 0.077, arch="arm64"),
        fake_instance_type("r5.large", 2, 16, 0.126),
    ]


class FakeCloudProvider:
    """In-memory CloudProvider. Inspect `instances`, `create_calls`, `deleted`, `node_classes_cleaned` (the
    (name, instanceProfile) of each `delete_node_class_resources` call), `stale_sweeps` (the hashes each
    `delete_stale_launch_templates` saw); steer with the setters."""

    def __init__(self, catalog: Iterable[InstanceType] | None = None, cluster_name: str = "test-cluster") -> None:
        self.catalog = sorted(catalog if catalog is not None else default_catalog(), key=lambda it: it.name)
        self.cluster_name = cluster_name
        self.unavailable = UnavailableOfferings()
        self.instances: dict[str, Instance] = {}
        self.create_calls: list[LaunchRequest] = []
        self.deleted: list[str] = []
        self.node_classes_cleaned: list[tuple[str, str | None]] = []
        self.stale_sweeps: list[dict[str, str | None]] = []
        self.stale_templates: list[str] = []  # launch templates the fake deems stale: listed, then deleted
        self._ice: set[tuple[str, str, str]] = set()
        self._tokens: dict[str, str] = {}
        self._errors: dict[str, list[CloudProviderError]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # --- steering -----------------------------------------------------------------------------------
    def set_insufficient_capacity(self, instance_type: str, zone: str, capacity_type: str = "on-demand") -> None:
        self._ice.add((instance_type, zone, capacity_type))

    def clear_insufficient_capacity(self) -> None:
        self._ice.clear()

    def fail_next(self, method: str, error: CloudProviderError) -> None:
        """The next call of `method` ("create", "get", "delete", ...) raises `error`."""
        self._errors.setdefault(method, []).append(error)

    def put_running(self, instance_id: str, tags: dict[str, str], **fields: Any) -> Instance:
        """Place a running m5.large in us-west-2a, on-demand, with these tags and any other `Instance`
        fields, as if launched outside `create` (a leaked instance, one of another run); returns it."""
        instance = Instance(
            id=instance_id,
            instance_type="m5.large",
            zone="us-west-2a",
            capacity_type="on-demand",
            state="running",
            provider_id=f"aws:///us-west-2a/{instance_id}",
            tags=tags,
            **fields,
        )
        self.instances[instance_id] = instance
        return instance

    def terminate_now(self, instance_id: str) -> None:
        """Finish a pending termination (the AWS side moves shutting-down -> terminated on its own)."""
        self.instances[instance_id] = self.instances[instance_id].model_copy(update={"state": "terminated"})

    def _raise_injected(self, method: str) -> None:
        queue = self._errors.get(method)
        if queue:
            raise queue.pop(0)

    # --- CloudProvider ------------------------------------------------------------------------------
    def create(self, request: LaunchRequest) -> Instance:
        with self._lock:
            self.create_calls.append(request)
            self._raise_injected("create")
            existing = self._live(request.node_claim_name)
            if existing:
                return existing[0]
            if request.client_token in self._tokens:
                return self.instances[self._tokens[request.client_token]]
            candidates, refused = self._candidates(request)
            if not candidates:
                self.unavailable.mark_all(refused)
                raise InsufficientCapacityError(
                    f"NodeClaim {request.node_claim_name}: every offering was refused",
                    sorted(set(refused), key=lambda o: (o.instance_type, o.zone, o.capacity_type)),
                )
            self.unavailable.mark_all(refused)
            _, name, zone, capacity_type = min(candidates)
            instance_id = f"i-{next(self._ids):017x}"
            tags = {**(request.node_class.spec.tags or {}), **request.tags}
            tags.update(
                {
                    TAG_NODECLAIM: request.node_claim_name,
                    TAG_NODEPOOL: request.node_pool,
                    TAG_CLUSTER_PREFIX + self.cluster_name: "owned",
                }
            )
            instance = Instance(
                id=instance_id,
                instance_type=name,
                zone=zone,
                capacity_type=capacity_type,
                state="running",
                provider_id=f"aws:///{zone}/{instance_id}",
                image_id="ami-fake",
                tags=dict(sorted(tags.items())),
            )
            self.instances[instance_id] = instance
            self._tokens[request.client_token] = instance_id
            return instance

    def _candidates(
        self, request: LaunchRequest
    ) -> tuple[list[tuple[float, str, str, str]], list[UnavailableOffering]]:
        allowed = request.capacity_types or ["on-demand"]
        by_name = {it.name: it for it in self.catalog}
        offers: dict[str, list[tuple[float, str, str, str]]] = {}
        refused: list[UnavailableOffering] = []
        for name in request.instance_types:
            for o in by_name[name].offerings if name in by_name else []:
                if o.capacity_type not in allowed or (request.zones and o.zone not in request.zones):
                    continue
                if self.unavailable.is_unavailable(name, o.zone, o.capacity_type):
                    continue
                if (name, o.zone, o.capacity_type) in self._ice:
                    refused.append(UnavailableOffering(name, o.zone, o.capacity_type))
                    continue
                offers.setdefault(o.capacity_type, []).append((o.price, name, o.zone, o.capacity_type))
        chosen = "spot" if "spot" in allowed and offers.get("spot") else "on-demand"
        return offers.get(chosen, []), refused

    def get(self, instance_id: str) -> Instance:
        self._raise_injected("get")
        instance = self.instances.get(instance_id)
        if instance is None or instance.state == "terminated":
            raise InstanceNotFoundError(f"instance {instance_id} does not exist or is terminated")
        return instance

    def find_by_node_claim(self, node_claim_name: str) -> Instance | None:
        self._raise_injected("find_by_node_claim")
        found = self._live(node_claim_name)
        return found[0] if found else None

    def list(self) -> builtins.list[Instance]:
        self._raise_injected("list")
        return self._live(None)

    def delete(self, instance_id: str) -> None:
        self._raise_injected("delete")
        instance = self.instances.get(instance_id)
        if instance is None or instance.state == "terminated":
            raise InstanceNotFoundError(f"instance {instance_id} is terminated")
        self.deleted.append(instance_id)
        self.instances[instance_id] = instance.model_copy(update={"state": "shutting-down"})

    def name_instance(self, instance_id: str, name: str) -> None:
        self._raise_injected("name_instance")
        instance = self.instances.get(instance_id)
        if instance is not None:
            self.instances[instance_id] = instance.model_copy(update={"tags": {**instance.tags, TAG_NAME: name}})

    def instance_types(self, node_class: EC2NodeClass | None) -> builtins.list[InstanceType]:
        self._raise_injected("instance_types")
        return self.unavailable.applied_to(self.catalog)

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        self._raise_injected("resolve_node_class")
        return ResolvedNodeClass(
            subnets=[
                {"id": f"subnet-{zone[-1]}", "zone": zone, "zoneID": f"usw2-az{i + 1}"} for i, zone in enumerate(ZONES)
            ],
            security_groups=[{"id": "sg-fake", "name": "fake"}],
            amis=[{"id": "ami-fake", "name": "fake-al2023", "arch": "x86_64"}],
            instance_profile=node_class.spec.instance_profile or f"{self.cluster_name}_fake",
        )

    def delete_node_class_resources(self, node_class_name: str, instance_profile: str | None) -> NodeClassResources:
        self._raise_injected("delete_node_class_resources")
        self.node_classes_cleaned.append((node_class_name, instance_profile))
        return NodeClassResources(instance_profile="" if instance_profile else f"{self.cluster_name}_fake")

    def stale_launch_templates(self, current_hashes: dict[str, str | None], min_age_seconds: int) -> builtins.list[str]:
        self._raise_injected("stale_launch_templates")
        return list(self.stale_templates)

    def delete_stale_launch_templates(
        self, current_hashes: dict[str, str | None], min_age_seconds: int
    ) -> builtins.list[str]:
        self._raise_injected("delete_stale_launch_templates")
        self.stale_sweeps.append(dict(current_hashes))
        deleted, self.stale_templates = self.stale_templates, []
        return deleted

    def _live(self, node_claim: str | None) -> builtins.list[Instance]:
        return sorted(
            (
                i
                for i in self.instances.values()
                if i.state in ("pending", "running", "stopping", "stopped")
                and (node_claim is None or i.tags.get(TAG_NODECLAIM) == node_claim)
            ),
            key=lambda i: i.id,
        )
