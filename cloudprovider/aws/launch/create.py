"""Launch one instance for a NodeClaim with CreateFleet (type instant), per `CloudProvider.create`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType, Offering
from apis.labels import ARCH, INSTANCE_SIZE, INSTANCE_TYPE, NODECLASS, ZONE
from cloudprovider.aws.errors import call, fleet_error_offering, has_code, is_capacity_code
from cloudprovider.aws.instances import InstanceQueries, to_instance
from cloudprovider.aws.instancetypes.translate import (
    RESOURCE_AMD_GPU,
    RESOURCE_GAUDI,
    RESOURCE_NEURON,
    RESOURCE_NEURON_CORE,
    RESOURCE_NVIDIA_GPU,
)
from cloudprovider.aws.launch.fleet_batcher import FleetBatcher
from cloudprovider.aws.launch.fleet_overrides import limit_overrides
from cloudprovider.aws.launch.launchtemplate import LaunchTemplates, LaunchTemplateSpec
from cloudprovider.aws.launch.reads import LaunchReads
from cloudprovider.aws.launch.userdata import BootstrapOptions, render
from cloudprovider.aws.nodeclass.amis import variant_for
from cloudprovider.aws.nodeclass.capacityreservations import CAPACITY_BLOCK, CapacityReservations
from cloudprovider.aws.nodeclass.cluster import ClusterConnection
from cloudprovider.aws.nodeclass.instanceprofile import InstanceProfiles
from cloudprovider.aws.nodeclass.resolve import ResolvedAMI, ami_family, instance_profile_name
from cloudprovider.aws.sdk import EC2API
from cloudprovider.errors import (
    CloudProviderError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
    UnavailableOffering,
)
from cloudprovider.types import (
    TAG_CLUSTER_PREFIX,
    TAG_EKS_CLUSTER_NAME,
    TAG_NAME,
    TAG_NODECLAIM,
    TAG_NODEPOOL,
    Instance,
    LaunchRequest,
)
from cloudprovider.unavailable import UnavailableOfferings

EC2_ARCH = {"amd64": "x86_64", "arm64": "arm64"}


@dataclass(frozen=True)
class Override:
    instance_type: str
    subnet_id: str
    zone: str
    price: float
    ami: ResolvedAMI
    reservation_id: str = ""  # a reserved override: the capacity reservation it launches into
    reservation_type: str = ""  # default | capacity-block
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)


def override_value(override: Override, key: str) -> str | None:
    """The override's value of a requirement key: its instance type, zone, or a label of its type."""
    if key == INSTANCE_TYPE:
        return override.instance_type
    if key == ZONE:
        return override.zone
    return override.labels.get(key)


@dataclass(frozen=True)
class ClusterInfo:
    """The cluster the launched nodes join, and the region they run in."""

    region: str
    connection: ClusterConnection

    @property
    def name(self) -> str:
        return self.connection.name

    def user_data(self, node_class: EC2NodeClass, labels: Mapping[str, str], taints: list[dict[str, str]]) -> str:
        """The node's user data for the node class's AMI family, joining this cluster with these labels and
        taints; NodeClassNotReadyError naming the node class when its userData cannot be merged."""
        connection = self.connection
        options = BootstrapOptions(
            cluster_name=connection.name,
            cluster_endpoint=connection.endpoint,
            ca_bundle=connection.ca_bundle,
            service_cidr=connection.service_cidr,
            dns_ip=connection.dns_ip,
            ip_family=connection.ip_family,
            labels=dict(labels),
            taints=taints,
            kubelet=node_class.spec.kubelet,
            custom_user_data=node_class.spec.user_data,
            instance_store_raid0=node_class.spec.instance_store_policy == "RAID0",
        )
        try:
            return render(ami_family(node_class), options)
        except ValueError as error:
            raise NodeClassNotReadyError(f"EC2NodeClass {node_class.name}: {error}") from error

    def tags(
        self, node_class: EC2NodeClass, node_claim: str, node_pool: str, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """spec.tags and `extra`, then the static tags (which win, as in Karpenter). `Name` is the user's
        when spec.tags sets it, else the NodeClaim's name until its Node registers (the claim sweep then
        names the instance after the Node, as Karpenter's tagging controller does)."""
        static = {
            TAG_NODECLAIM: node_claim,
            TAG_NODEPOOL: node_pool,
            TAG_CLUSTER_PREFIX + self.name: "owned",
            TAG_EKS_CLUSTER_NAME: self.name,
            NODECLASS: node_class.name,
        }
        merged = {TAG_NAME: node_claim, **(node_class.spec.tags or {}), **(extra or {}), **static}
        return {k: merged[k] for k in sorted(merged)}


def choose_capacity_type(allowed: list[str], candidates: Mapping[str, list[Override]]) -> str:
    """Reserved, then spot, when allowed and some such offering is available, else on-demand
    (Karpenter's order)."""
    if "reserved" in allowed and candidates.get("reserved"):
        return "reserved"
    if "spot" in allowed and candidates.get("spot"):
        return "spot"
    return "on-demand"


def pick_ami(instance_type: InstanceType, amis: list[ResolvedAMI]) -> ResolvedAMI | None:
    """The AMI for the type's architecture and variant (`amis.variant_for`: nvidia for NVIDIA GPUs, neuron
    for Neuron devices, else standard), else any AMI of the architecture."""
    arch = EC2_ARCH.get(instance_type.labels.get(ARCH, "amd64"), "x86_64")
    wanted = variant_for(RESOURCE_NVIDIA_GPU in instance_type.capacity, RESOURCE_NEURON in instance_type.capacity)
    matching = [a for a in amis if a.arch == arch]
    preferred = [a for a in matching if a.variant == wanted]
    candidates = preferred or matching
    return candidates[0] if candidates else None


# Accelerator resources whose instance types a launch avoids when others fit (`prefer_generic`).
EXOTIC_RESOURCES = (RESOURCE_NVIDIA_GPU, RESOURCE_AMD_GPU, RESOURCE_NEURON, RESOURCE_NEURON_CORE, RESOURCE_GAUDI)


def prefer_generic(types: list[InstanceType]) -> list[InstanceType]:
    """The types that are neither bare metal (a size containing "metal") nor carry an accelerator
    (EXOTIC_RESOURCES), when there are any; else all of them. Karpenter's AWS provider narrows every
    launch so: a claim any type can serve (a NodePool that does not restrict categories) gets a general
    purpose node rather than a GPU or .metal one that happens to be among the cheapest fitting, while a
    claim for GPU pods, whose types all have GPUs, keeps them."""
    generic = [
        it
        for it in types
        if "metal" not in it.labels.get(INSTANCE_SIZE, "") and not any(it.capacity.get(r) for r in EXOTIC_RESOURCES)
    ]
    return generic or types


def spot_cheaper_than_on_demand(candidates: Mapping[str, list[Override]]) -> list[Override]:
    """Spot overrides, minus those pricier than the cheapest on-demand one (Karpenter drops them for
    claims that allow both)."""
    spot = candidates.get("spot", [])
    on_demand = candidates.get("on-demand", [])
    if not on_demand:
        return spot
    ceiling = min(ov.price for ov in on_demand)
    return [ov for ov in spot if ov.price <= ceiling] or spot


def one_reservation_type(reserved: list[Override]) -> list[Override]:
    """The reserved overrides of the cheapest one's reservation type: one fleet launches either into
    On-Demand Capacity Reservations or into capacity blocks, whose market type differs."""
    return [ov for ov in reserved if ov.reservation_type == reserved[0].reservation_type] if reserved else []


def new_fleet_batcher(ec2: EC2API, observe: Callable[[int, float], None] | None = None) -> FleetBatcher:
    """A FleetBatcher (Karpenter's windows) sending its CreateFleet and CreateTags calls through `ec2`;
    `observe` is told each batch's size and window (FleetBatcher)."""
    return FleetBatcher(
        lambda **kwargs: call("CreateFleet", ec2.create_fleet, **kwargs),
        lambda **kwargs: call("CreateTags", ec2.create_tags, **kwargs),
        observe=observe,
    )


class Zones(NamedTuple):
    """A launch's subnets' zones: `of_subnet` by subnet id, and each zone's id (`use1-az1`) by zone name."""

    of_subnet: dict[str, str]
    ids: dict[str, str]


class Launcher:
    """Everything `create()` needs; see `CloudProvider.create` for the contract. `observe_launch_failure`
    is told of every offering a CreateFleet reports failing (`_fleet`)."""

    def __init__(
        self,
        ec2: EC2API,
        cluster: ClusterInfo,
        resolver: LaunchReads,
        templates: LaunchTemplates,
        profiles: InstanceProfiles,
        instances: InstanceQueries,
        unavailable: UnavailableOfferings,
        catalog: Callable[[Any], list[InstanceType]],
        reservations: CapacityReservations | None = None,
        batcher: FleetBatcher | None = None,
        observe_launch_failure: Callable[[str, str, str, str], None] | None = None,
    ) -> None:
        self._ec2 = ec2
        self._cluster = cluster
        self._resolver = resolver
        self._templates = templates
        self._profiles = profiles
        self._instances = instances
        self._unavailable = unavailable
        self._catalog = catalog
        self._reservations = reservations
        self._batcher = batcher or new_fleet_batcher(ec2)
        self._observe_launch_failure = observe_launch_failure

    def create(self, request: LaunchRequest) -> Instance:
        existing = self._instances.live(request.node_claim_name)
        if existing:
            return existing[0]
        node_class = request.node_class
        subnets = self._resolver.subnets(node_class)
        groups = self._resolver.security_groups(node_class)
        amis = self._resolver.amis(node_class)
        group = self._resolver.placement_group(node_class)
        family = ami_family(node_class)
        candidates = self._overrides(request, subnets, amis)
        capacity_type = choose_capacity_type(request.capacity_types or ["on-demand"], candidates)
        if capacity_type == "reserved":
            overrides = one_reservation_type(candidates["reserved"])
        else:
            overrides = (
                spot_cheaper_than_on_demand(candidates) if capacity_type == "spot" else candidates.get("on-demand", [])
            )
        overrides = limit_overrides(overrides, override_value, request.min_values)
        if not overrides:
            refused = self._unavailable_requested(request)
            raise InsufficientCapacityError(
                f"NodeClaim {request.node_claim_name}: no available offering among {len(request.instance_types)} "
                f"instance types in zones {request.zones or 'any'} for capacity types {request.capacity_types} "
                f"({len(refused)} recently refused)",
                refused,
            )
        profile = self._profiles.ensure(
            instance_profile_name(self._cluster.name, self._cluster.region, node_class),
            node_class.spec.role,
            node_class.name,
            node_class.spec.tags,
        )
        tags = self.tags(request)
        user_data = self._cluster.user_data(node_class, request.labels, request.taints)
        configs = self._launch_template_configs(
            overrides, user_data, groups, profile, family, request, tags, group.id if group else ""
        )
        zones = Zones({s["id"]: s["zone"] for s in subnets}, {s["zone"]: s.get("zoneID", "") for s in subnets})
        if capacity_type == "reserved":
            instance = self._reserved_fleet(request, overrides, configs, tags, zones)
        else:
            instance = self._fleet(request, capacity_type, configs, tags, zones, node_class.spec.context)
        if group and not instance.placement_group_id:  # DescribeInstances did not see it yet
            instance = instance.model_copy(update={"placement_group_id": group.id})
        return instance

    def _reserved_fleet(
        self,
        request: LaunchRequest,
        overrides: list[Override],
        configs: list[dict[str, Any]],
        tags: dict[str, str],
        zones: Zones,
    ) -> Instance:
        """A launch into capacity reservations: each launch template targets one reservation; the fleet's
        market is on-demand, or capacity-block for capacity blocks. A refused reservation is offered no
        more (until the next refresh finds room in it); the launched one counts one instance fewer."""
        market = CAPACITY_BLOCK if overrides[0].reservation_type == CAPACITY_BLOCK else "on-demand"
        by_offering = {(ov.instance_type, ov.zone): ov for ov in reversed(overrides)}
        try:
            instance = self._fleet(request, "reserved", configs, tags, zones, request.node_class.spec.context, market)
        except InsufficientCapacityError as error:
            for refused in error.offerings:
                if (ov := by_offering.get((refused.instance_type, refused.zone))) and self._reservations:
                    self._reservations.exhaust(ov.reservation_id)
            raise
        chosen = by_offering.get((instance.instance_type, instance.zone))
        reservation_id = instance.capacity_reservation_id or (chosen.reservation_id if chosen else "")
        if self._reservations and reservation_id:
            self._reservations.consume(reservation_id)
        return instance.model_copy(
            update={
                "capacity_type": "reserved",
                "capacity_reservation_id": reservation_id,
                "capacity_reservation_type": instance.capacity_reservation_type
                or (chosen.reservation_type if chosen else "default"),
            }
        )

    def _unavailable_requested(self, request: LaunchRequest) -> list[UnavailableOffering]:
        """The offerings of this request that the unavailable-offerings cache holds."""
        allowed = request.capacity_types or ["on-demand"]
        wanted = set(request.instance_types)
        return [
            o
            for o in self._unavailable.snapshot()
            if o.instance_type in wanted
            and o.capacity_type in allowed
            and (not request.zones or o.zone in request.zones)
        ]

    def tags(self, request: LaunchRequest) -> dict[str, str]:
        """The request's instance tags (ClusterInfo.tags)."""
        return self._cluster.tags(request.node_class, request.node_claim_name, request.node_pool, request.tags)

    def _overrides(
        self, request: LaunchRequest, subnets: list[dict[str, str]], amis: list[ResolvedAMI]
    ) -> dict[str, list[Override]]:
        """Available offerings per capacity type, cheapest first, at most one subnet per zone (of the
        request's zones and zone ids)."""
        subnet_by_zone: dict[str, str] = {}
        for s in subnets:
            if (not request.zones or s["zone"] in request.zones) and (
                not request.zone_ids or s.get("zoneID") in request.zone_ids
            ):
                subnet_by_zone.setdefault(s["zone"], s["id"])
        catalog = {it.name: it for it in self._catalog(request.node_class)}
        allowed = request.capacity_types or ["on-demand"]

        def usable(o: Offering) -> bool:
            return o.available and o.zone in subnet_by_zone and o.capacity_type in allowed

        requested = [it for it in (catalog.get(name) for name in request.instance_types) if it is not None]
        ami_of = {it.name: ami for it in requested if (ami := pick_ami(it, amis)) is not None}
        launchable = [it for it in requested if it.name in ami_of and any(usable(o) for o in it.offerings)]
        out: dict[str, list[Override]] = {}
        for it in prefer_generic(launchable):
            name, ami = it.name, ami_of[it.name]
            for o in it.offerings:
                if usable(o):
                    out.setdefault(o.capacity_type, []).append(
                        Override(
                            name,
                            subnet_by_zone[o.zone],
                            o.zone,
                            o.price,
                            ami,
                            o.reservation_id or "",
                            o.reservation_type or "",
                            it.labels,
                        )
                    )
        for items in out.values():
            items.sort(key=lambda ov: (ov.price, ov.instance_type, ov.zone))
        return out

    def _launch_template_configs(
        self,
        overrides: list[Override],
        user_data: str,
        groups: list[dict[str, str]],
        profile: str,
        family: str,
        request: LaunchRequest,
        tags: dict[str, str],
        placement_group_id: str = "",
    ) -> list[dict[str, Any]]:
        by_ami: dict[tuple[str, str], list[Override]] = {}
        for ov in overrides:  # one template per AMI, and per reservation for reserved overrides
            by_ami.setdefault((ov.ami.id, ov.reservation_id), []).append(ov)
        priority = {id(ov): float(i) for i, ov in enumerate(overrides)}
        configs = []
        for (ami_id, reservation_id), items in by_ami.items():
            spec = LaunchTemplateSpec(
                image_id=ami_id,
                user_data=user_data,
                security_group_ids=tuple(g["id"] for g in groups),
                instance_profile=profile,
                node_class=request.node_class,
                family=family,
                tags=tuple((k, v) for k, v in tags.items() if k not in (TAG_NAME, TAG_NODECLAIM)),
                capacity_reservation_id=reservation_id,
                capacity_reservation_type=items[0].reservation_type,
                placement_group_id=placement_group_id,
            )
            name = self._templates.ensure(spec)
            configs.append(
                {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                    "Overrides": [
                        {
                            "InstanceType": ov.instance_type,
                            "SubnetId": ov.subnet_id,
                            "AvailabilityZone": ov.zone,
                            "Priority": priority[id(ov)],
                        }
                        for ov in items
                    ],
                }
            )
        return configs

    def _fleet(
        self,
        request: LaunchRequest,
        capacity_type: str,
        configs: list[dict[str, Any]],
        tags: dict[str, str],
        zones: Zones,
        context: str | None = None,
        market: str = "",
    ) -> Instance:
        """One instant CreateFleet. `context`: the node class's `spec.context` (reserved capacity shared
        through AWS's context mechanism), sent as CreateFleet's Context. `market`: the fleet's target
        capacity type when it is not `capacity_type` (a `reserved` launch buys on-demand or
        capacity-block capacity); refused offerings are recorded under `capacity_type`. Each offering the
        fleet reports failing, whatever the error, is told to `observe_launch_failure` (zone, zone id,
        capacity type, error code), as Karpenter counts them."""
        tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]
        kwargs: dict[str, Any] = {
            "Type": "instant",
            "ClientToken": request.client_token,
            "LaunchTemplateConfigs": configs,
            "TargetCapacitySpecification": {
                "TotalTargetCapacity": 1,
                "DefaultTargetCapacityType": market or capacity_type,
            },
            "TagSpecifications": [{"ResourceType": r, "Tags": tag_list} for r in ("instance", "volume", "fleet")],
        }
        if context:
            kwargs["Context"] = context
        if capacity_type == "spot":
            kwargs["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
        else:
            kwargs["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
        try:
            response = self._batcher.create_fleet(kwargs)
        except CloudProviderError as error:
            if has_code(
                error, "InvalidLaunchTemplateName.*", "InvalidLaunchTemplateId.*"
            ):  # deleted behind our back: recreate on the next attempt
                self._templates.forget()
                raise CloudProviderError(str(error), retryable=True) from error
            raise
        errors = response.get("Errors", [])
        failed = [
            fleet_error_offering({**e, "Lifecycle": capacity_type} if market else e, zones.of_subnet, capacity_type)
            for e in errors
        ]
        if self._observe_launch_failure is not None:
            for offering in failed:
                zone_id = zones.ids.get(offering.zone, "")
                self._observe_launch_failure(offering.zone, zone_id, offering.capacity_type, offering.reason)
        refused = [o for o in failed if is_capacity_code(o.reason)]
        self._unavailable.mark_all(refused)
        ids = [i for group in response.get("Instances", []) for i in group.get("InstanceIds", [])]
        if ids:
            return self._launched(ids[0], response, capacity_type)
        if refused and len(refused) == len(errors):
            raise InsufficientCapacityError(
                f"NodeClaim {request.node_claim_name}: every offering was refused: "
                + ", ".join(f"{o.instance_type}/{o.zone}/{o.capacity_type} ({o.reason})" for o in refused),
                _dedupe(refused),
            )
        detail = (
            "; ".join(f"{e.get('ErrorCode')}: {e.get('ErrorMessage')}" for e in errors) or "no instance and no error"
        )
        raise CloudProviderError(f"CreateFleet for NodeClaim {request.node_claim_name}: {detail}", retryable=True)

    def _launched(self, instance_id: str, response: dict[str, Any], capacity_type: str) -> Instance:
        found = self._instances.describe(InstanceIds=[instance_id])
        if found:
            return found[0]
        # DescribeInstances is eventually consistent: fall back to what CreateFleet said.
        group = response["Instances"][0]
        overrides = group.get("LaunchTemplateAndOverrides", {}).get("Overrides", {})
        return to_instance(
            {
                "InstanceId": instance_id,
                "InstanceType": group.get("InstanceType", overrides.get("InstanceType", "")),
                "Placement": {"AvailabilityZone": overrides.get("AvailabilityZone", "")},
                "InstanceLifecycle": "spot" if capacity_type == "spot" else "",
                "State": {"Name": "pending"},
            }
        )


def _dedupe(offerings: list[UnavailableOffering]) -> list[UnavailableOffering]:
    seen: dict[tuple[str, str, str], UnavailableOffering] = {}
    for o in offerings:
        seen.setdefault((o.instance_type, o.zone, o.capacity_type), o)
    return [seen[k] for k in sorted(seen)]
