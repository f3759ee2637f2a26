"""AWSCloudProvider: `cloudprovider.types.CloudProvider` over EC2, SSM and IAM.

Built by `cloudprovider.aws.factory.new_aws_cloud_provider`; the clients are injected so tests can point
them anywhere. Every SDK error leaves this package translated (see `cloudprovider.aws.errors`).
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from apis.ec2nodeclass import INSTANCE_PROFILE_READY, VALIDATION_SUCCEEDED, EC2NodeClass
from apis.instancetype import InstanceType
from apis.storage import volume_bytes
from cloudprovider.aws.errors import call
from cloudprovider.aws.instances import InstanceQueries
from cloudprovider.aws.instancetypes.offerings import InstanceTypeCatalog
from cloudprovider.aws.instancetypes.translate import DEFAULT_VM_MEMORY_OVERHEAD_PERCENT, InstanceTypeSettings
from cloudprovider.aws.launch.authorization import AWAITING, AuthorizationChecks, DryRun, dry_runs
from cloudprovider.aws.launch.create import ClusterInfo, Launcher, new_fleet_batcher
from cloudprovider.aws.launch.launchtemplate import LaunchTemplates, is_stale
from cloudprovider.aws.launch.reads import LaunchReads
from cloudprovider.aws.nodeclass.capacityreservations import CapacityReservations, with_reserved_offerings
from cloudprovider.aws.nodeclass.cluster import ClusterConnection
from cloudprovider.aws.nodeclass.instanceprofile import InstanceProfiles
from cloudprovider.aws.nodeclass.resolve import (
    NodeClassResolver,
    ami_family,
    generated_profile_name,
    instance_profile_name,
)
from cloudprovider.aws.pricing.pricebook import PriceBook
from cloudprovider.aws.pricing.tables import PriceTable
from cloudprovider.aws.sdk import EC2API, IAMAPI, SSMAPI, PricingAPI
from cloudprovider.errors import InstanceNotFoundError, NodeClassNotReadyError, PartReadiness
from cloudprovider.types import TAG_NAME, Instance, LaunchRequest, NodeClassResources, ResolvedNodeClass
from cloudprovider.unavailable import UnavailableOfferings


class AWSCloudProvider:
    """The AWS implementation of the CloudProvider protocol (see its docstrings for each contract).

    `cluster` is what launched nodes need to join (endpoint, CA, service CIDR; see
    `cloudprovider.aws.nodeclass.cluster.resolve_cluster_connection`); without it their user data carries only
    the name and `cluster_endpoint`. `reserved_capacity` is Karpenter's ReservedCapacity feature gate:
    when on, the capacity reservations an EC2NodeClass selects are resolved into its status and offered
    as `reserved` capacity (cloudprovider.aws.nodeclass.capacityreservations). `observe_fleet_batch` is told the
    size and window of each CreateFleet batch (`cloudprovider.aws.launch.fleet_batcher`), `observe_launch_failure`
    the zone, zone id, capacity type and error code of each offering a CreateFleet reports failing.

    `prices` (a PriceBook of `pricing`, a client of the Pricing API, starting from the table `prices`,
    by default the region's shipped one) holds the current on-demand and spot prices; whoever runs the
    provider refreshes them (activities.provisioning.price_refresh)."""

    def __init__(
        self,
        ec2: EC2API,
        ssm: SSMAPI,
        iam: IAMAPI,
        *,
        region: str,
        cluster_name: str,
        cluster_endpoint: str = "",
        cluster: ClusterConnection | None = None,
        kubernetes_version: str = "1.32",
        prices: PriceTable | None = None,
        pricing: PricingAPI | None = None,
        unavailable: UnavailableOfferings | None = None,
        clock: Callable[[], float] = time.monotonic,
        catalog_ttl_seconds: float = 3600.0,
        reserved_capacity: bool = True,
        observe_fleet_batch: Callable[[int, float], None] | None = None,
        observe_launch_failure: Callable[[str, str, str, str], None] | None = None,
        vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
        reserved_enis: int = 0,
        dry_run: bool = True,
    ) -> None:
        if not cluster_name:
            raise ValueError("AWSCloudProvider: cluster_name is required (the EKS cluster name, e.g. my-cluster)")
        if cluster is not None and cluster.name != cluster_name:
            raise ValueError(f"AWSCloudProvider: cluster {cluster.name!r} is not cluster_name {cluster_name!r}")
        self._ec2 = ec2
        self._cluster_name = cluster_name
        self._type_defaults = InstanceTypeSettings(
            vm_memory_overhead_percent=vm_memory_overhead_percent, reserved_enis=reserved_enis
        )
        self._region = region
        self.unavailable = unavailable or UnavailableOfferings(clock=clock)
        self.resolver = NodeClassResolver(ec2, ssm, cluster_name, region, kubernetes_version)
        self._launch_reads = LaunchReads(self.resolver, clock=clock)
        self.prices = PriceBook(region, ec2, pricing, clock, prices)
        self.catalog = InstanceTypeCatalog(ec2, self.prices, self.unavailable, clock, catalog_ttl_seconds)
        self._reserved_capacity = reserved_capacity
        self.reservations = CapacityReservations(ec2, clock)
        self._instances = InstanceQueries(ec2, cluster_name)
        self._profiles = InstanceProfiles(iam, cluster_name, region)
        self._templates = LaunchTemplates(ec2)
        self._cluster_info = ClusterInfo(region, cluster or ClusterConnection(cluster_name, cluster_endpoint))
        self._authorization = AuthorizationChecks(ec2, clock, dry_run=dry_run)
        self._launcher = Launcher(
            ec2,
            self._cluster_info,
            self._launch_reads,
            self._templates,
            self._profiles,
            self._instances,
            self.unavailable,
            self.instance_types,
            reservations=self.reservations,
            batcher=new_fleet_batcher(ec2, observe_fleet_batch),
            observe_launch_failure=observe_launch_failure,
        )

    def create(self, request: LaunchRequest) -> Instance:
        return self._launcher.create(request)

    def get(self, instance_id: str) -> Instance:
        found = self._instances.describe(InstanceIds=[instance_id])
        if not found or found[0].state == "terminated":
            raise InstanceNotFoundError(f"instance {instance_id} does not exist or is terminated")
        return found[0]

    def find_by_node_claim(self, node_claim_name: str) -> Instance | None:
        found = self._instances.live(node_claim_name)
        return found[0] if found else None

    def list(self) -> list[Instance]:
        return self._instances.live()

    def instance_statuses(self) -> builtins.list[dict[str, Any]]:
        """The status checks and scheduled events (DescribeInstanceStatus `InstanceStatuses` entries) of
        this cluster's running instances, found by the cluster tag nodeflow puts on every instance it
        launches (DescribeInstanceStatus cannot filter by tag, so DescribeInstances lists them first).
        Read them with cloudprovider.aws.interruption.instance_status. AWS-only: not part of the CloudProvider
        protocol."""
        running = [i.id for i in self._instances.live() if i.state == "running"]
        return self._instances.statuses(running) if running else []

    def delete(self, instance_id: str) -> None:
        response = call("TerminateInstances", self._ec2.terminate_instances, InstanceIds=[instance_id])
        changes = response.get("TerminatingInstances", [])
        if not changes or changes[0].get("PreviousState", {}).get("Name") == "terminated":
            raise InstanceNotFoundError(f"instance {instance_id} is terminated")

    def name_instance(self, instance_id: str, name: str) -> None:
        # The controller's policy lets it tag this cluster's instances with Name and karpenter.sh/nodeclaim.
        call("CreateTags", self._ec2.create_tags, Resources=[instance_id], Tags=[{"Key": TAG_NAME, "Value": name}])

    def instance_types(self, node_class: EC2NodeClass | None) -> builtins.list[InstanceType]:
        if node_class is None:
            return self.catalog.instance_types(self._type_defaults, None)
        try:
            family = ami_family(node_class)
        except NodeClassNotReadyError:
            family = "AL2023"
        settings = replace(
            self._type_defaults,
            kubelet=node_class.spec.kubelet,
            root_volume_bytes=volume_bytes(node_class, family),
            instance_store_raid0=node_class.spec.instance_store_policy == "RAID0",
        )
        zones = sorted({s["zone"] for s in self._launch_reads.subnets(node_class)})
        types = self.catalog.instance_types(settings, zones)
        if self._reserved_capacity:
            types = with_reserved_offerings(types, self.reservations.selected(node_class))
        return types

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        """The selectors resolved, then the instance profile ensured (created for `spec.role`, as
        Karpenter's node class controller does), so a role that does not exist makes the node class not
        ready rather than failing every launch. Profiles are ensured once per process and role. With the
        ReservedCapacity gate on, the capacity reservations it selects too (selecting none is fine). Then
        the launch calls are tried with DryRun (ValidationSucceeded, cloudprovider.aws.launch.authorization): a
        call the controller may not make makes the node class not ready."""
        try:
            resolved = self.resolver.resolve(node_class)
        except NodeClassNotReadyError as error:  # the profile is still looked at, for InstanceProfileReady
            conditions = {**error.conditions, INSTANCE_PROFILE_READY: self._profile_readiness(node_class)}
            raise NodeClassNotReadyError(str(error), {**conditions, VALIDATION_SUCCEEDED: AWAITING}) from error
        if self._reserved_capacity:
            resolved.capacity_reservations = self.reservations.selected(node_class)
        status, _, message = resolved.conditions[INSTANCE_PROFILE_READY] = self._profile_readiness(node_class)
        if status != "True":
            raise NodeClassNotReadyError(message, {**resolved.conditions, VALIDATION_SUCCEEDED: AWAITING})
        status, _, message = resolved.conditions[VALIDATION_SUCCEEDED] = self._authorization.check(
            node_class, lambda: self._dry_runs(node_class, resolved)
        )
        if status == "False":
            raise NodeClassNotReadyError(message, resolved.conditions)
        return resolved

    def _dry_runs(self, node_class: EC2NodeClass, resolved: ResolvedNodeClass) -> builtins.list[DryRun]:
        """The launch calls with this node class, to send with DryRun (cloudprovider.aws.launch.authorization)."""
        info = self._cluster_info
        return dry_runs(node_class, resolved, info.user_data(node_class, {}, []), info.tags(node_class, "", ""))

    def _profile_readiness(self, node_class: EC2NodeClass) -> PartReadiness:
        """The node class's instance profile ensured (InstanceProfileReady): True, or False naming the role."""
        profile = instance_profile_name(self._cluster_name, self._region, node_class)
        try:
            self._profiles.ensure(profile, node_class.spec.role, node_class.name, node_class.spec.tags)
        except NodeClassNotReadyError as error:
            message = (
                f"EC2NodeClass {node_class.name}: {error}; create the role or fix spec.role"
                if node_class.spec.role
                else f"EC2NodeClass {node_class.name}: {error}"
            )
            return ("False", "NodeRoleNotFound", message)
        return ("True", INSTANCE_PROFILE_READY, "")

    def delete_node_class_resources(self, node_class_name: str, instance_profile: str | None) -> NodeClassResources:
        """Launch templates first, then the profile their launches would pass: a template never names a
        profile that is already gone."""
        templates = self._templates.delete(self._templates.owned(self._cluster_name, node_class_name))
        profile = generated_profile_name(self._cluster_name, self._region, node_class_name)
        deleted = profile != instance_profile and self._profiles.delete(profile, node_class_name)
        return NodeClassResources(launch_templates=templates, instance_profile=profile if deleted else "")

    def stale_launch_templates(self, current_hashes: dict[str, str | None], min_age_seconds: int) -> builtins.list[str]:
        stale = self._stale_templates(current_hashes, min_age_seconds)
        return [str(t.get("LaunchTemplateName", t["LaunchTemplateId"])) for t in stale]

    def delete_stale_launch_templates(
        self, current_hashes: dict[str, str | None], min_age_seconds: int
    ) -> builtins.list[str]:
        return self._templates.delete(self._stale_templates(current_hashes, min_age_seconds))

    def _stale_templates(
        self, current_hashes: dict[str, str | None], min_age_seconds: int
    ) -> builtins.list[dict[str, Any]]:
        now, min_age = datetime.now(UTC), timedelta(seconds=min_age_seconds)
        owned = self._templates.owned(self._cluster_name)
        return [t for t in owned if is_stale(t, current_hashes, now, min_age)]
