"""The cloud provider boundary: the narrow surface nodeflow needs from a cloud, as a Protocol.

Implementations: `cloudprovider.aws.AWSCloudProvider` (boto3 EC2/SSM) and `cloudprovider.fake.FakeCloudProvider`
(in memory, for unit tests). Every method is synchronous (activities run them in threads) and idempotent
where its docstring says so. Errors are `cloudprovider.errors` types only.
"""

from __future__ import annotations

import builtins
from typing import Protocol

from pydantic import BaseModel, Field

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType

# Tags every launched instance carries (Karpenter's names).
TAG_NODECLAIM = "karpenter.sh/nodeclaim"
TAG_NODEPOOL = "karpenter.sh/nodepool"
TAG_CLUSTER_PREFIX = "kubernetes.io/cluster/"  # kubernetes.io/cluster/<name>=owned
TAG_EKS_CLUSTER_NAME = "eks:eks-cluster-name"  # Karpenter v1: on instances, templates and instance profiles
TAG_NAME = "Name"


class LaunchRequest(BaseModel):
    """Everything needed to launch one instance for one NodeClaim.

    `instance_types` is ordered cheapest first. `zones`, `zone_ids` (topology.k8s.aws/zone-id) and
    `capacity_types` are the values the claim's requirements allow (empty = any). `client_token` makes
    CreateFleet idempotent (the NodeClaim's uid). `tags` are added to the instance, volumes and launch
    template. `min_values`: the claim's requirements' minValues by key (the launch keeps that many
    distinct values among its offerings, see `cloudprovider.aws.launch.fleet_overrides`).
    """

    node_claim_name: str
    node_pool: str
    client_token: str
    node_class: EC2NodeClass
    instance_types: list[str]
    zones: list[str] = Field(default_factory=list)
    zone_ids: list[str] = Field(default_factory=list)
    capacity_types: list[str] = Field(default_factory=lambda: ["on-demand"])
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[dict[str, str]] = Field(default_factory=list)
    tags: dict[str, str] = Field(default_factory=dict)
    min_values: dict[str, int] = Field(default_factory=dict)


def instance_id_of(provider_id: str) -> str:
    """The instance id at the end of a provider ID (`aws:///us-west-2a/i-0abc` -> `i-0abc`); '' for ''."""
    return provider_id.rsplit("/", 1)[-1]


class Instance(BaseModel):
    """A cloud instance as nodeflow sees it. `provider_id` is `aws:///<zone>/<instance-id>`."""

    id: str
    instance_type: str
    zone: str
    capacity_type: str  # on-demand | spot | reserved (launched into a capacity reservation)
    state: str  # pending | running | shutting-down | terminated | stopping | stopped
    provider_id: str
    image_id: str = ""
    private_dns_name: str = ""
    launch_time: str = ""
    subnet_id: str = ""  # "" when the cloud did not say
    security_group_ids: list[str] = Field(default_factory=list)
    tags: dict[str, str] = Field(default_factory=dict)
    capacity_reservation_id: str = ""  # the reservation a reserved instance runs in
    capacity_reservation_type: str = ""  # default | capacity-block, for a reserved instance
    placement_group_id: str = ""  # the placement group the instance runs in
    placement_group_partition: str = ""  # its partition, in a partition group ("" when EC2 has not said)

    @property
    def node_claim(self) -> str | None:
        return self.tags.get(TAG_NODECLAIM)


class CapacityReservation(BaseModel):
    """A capacity reservation a node class selects: where it is, what it holds, and how many more
    instances it can take right now (`available`). `reservation_type` is `default` (an On-Demand
    Capacity Reservation) or `capacity-block`; `state` is `active` or `expiring`; `end_time` is RFC 3339
    or "" for a reservation without an end."""

    id: str
    instance_type: str
    zone: str
    owner_id: str
    instance_match_criteria: str  # open | targeted
    reservation_type: str = "default"
    state: str = "active"
    end_time: str = ""
    available: int = 0
    total: int = 0


class ResolvedNodeClass(BaseModel):
    """What an EC2NodeClass's selector terms resolve to right now (for status and drift)."""

    subnets: list[dict[str, str]] = Field(default_factory=list)  # {"id", "zone", "zoneID"}
    security_groups: list[dict[str, str]] = Field(default_factory=list)  # {"id", "name"}
    amis: list[dict[str, str]] = Field(default_factory=list)  # {"id", "name", "arch", "variant"[, "deprecated"]}
    instance_profile: str = ""
    capacity_reservations: list[CapacityReservation] = Field(default_factory=list)
    placement_group_id: str = ""  # the group spec.placementGroupSelector names; "" when it names none
    # each part's readiness (Karpenter's SubnetsReady, SecurityGroupsReady, AMIsReady,
    # InstanceProfileReady): (status, reason, message)
    conditions: dict[str, tuple[str, str, str]] = Field(default_factory=dict)


class NodeClassResources(BaseModel):
    """What `delete_node_class_resources` deleted: launch template names, and the instance profile's
    name ('' when none was nodeflow's to delete)."""

    launch_templates: list[str] = Field(default_factory=list)
    instance_profile: str = ""


class CloudProvider(Protocol):
    """The contract. See each method for idempotency and errors."""

    def create(self, request: LaunchRequest) -> Instance:
        """Launch one instance for the claim, or return the one already launched for it.

        Idempotent: first looks for a live instance tagged `karpenter.sh/nodeclaim=<name>` and returns it;
        otherwise calls CreateFleet (type instant, ClientToken = request.client_token) with one override per
        (instance type, subnet in an allowed zone), cheapest first. Raises InsufficientCapacityError when
        every override was refused (its `offerings` name each one), NodeClassNotReadyError when the node
        class resolves to no subnet, security group or AMI (or its placementGroupSelector to no group),
        ThrottledError / CloudProviderError(retryable) for throttling and 5xx.
        """
        ...

    def get(self, instance_id: str) -> Instance:
        """The instance by id. Raises InstanceNotFoundError if it does not exist or is terminated."""
        ...

    def find_by_node_claim(self, node_claim_name: str) -> Instance | None:
        """The live (not terminated) instance tagged with this claim, or None."""
        ...

    def list(self) -> list[Instance]:
        """Every live instance this cluster launched (tagged with the cluster), sorted by id."""
        ...

    def delete(self, instance_id: str) -> None:
        """Start terminating the instance. Raises InstanceNotFoundError once it is gone (terminated or
        unknown); callers call again until then, so delete is safe to repeat."""
        ...

    def name_instance(self, instance_id: str, name: str) -> None:
        """Set the instance's `Name` tag (the Node's name once it registered, as Karpenter's tagging
        controller does). Idempotent; raises CloudProviderError."""
        ...

    def instance_types(self, node_class: EC2NodeClass | None) -> builtins.list[InstanceType]:
        """The catalog: every instance type offered in the region with capacity, overhead (EKS formulas,
        the node class's kubelet settings applied), labels and offerings (zone x capacity type x price,
        `available` False where the unavailable-offerings cache says so). Sorted by name."""
        ...

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        """Resolve subnets, security groups, AMIs and the instance profile. Raises NodeClassNotReadyError
        naming the field and the fix when the node class cannot be used (nothing matches a selector, an AMI
        family nodeflow does not support, a role that does not exist); other CloudProviderErrors are the
        cloud's (`retryable` says whether to try again)."""
        ...

    def delete_node_class_resources(self, node_class_name: str, instance_profile: str | None) -> NodeClassResources:
        """Delete what nodeflow created for the node class: every launch template tagged as nodeflow's for
        it, and the instance profile it created for `spec.role` (tagged as nodeflow's for this node class
        and cluster). `instance_profile`, the node class's `spec.instanceProfile` (the user's), is never
        deleted, nor is anything nodeflow did not create. Idempotent: what is already gone is skipped."""
        ...

    def stale_launch_templates(self, current_hashes: dict[str, str | None], min_age_seconds: int) -> builtins.list[str]:
        """The names of the launch templates `delete_stale_launch_templates` would delete now; deletes
        nothing."""
        ...

    def delete_stale_launch_templates(
        self, current_hashes: dict[str, str | None], min_age_seconds: int
    ) -> builtins.list[str]:
        """Delete nodeflow's launch templates of this cluster that no EC2NodeClass uses any more: made for
        a node class not in `current_hashes` (name -> static hash; None: unknown, keep all of its), or
        under another hash, and created at least `min_age_seconds` ago. Returns their names."""
        ...
