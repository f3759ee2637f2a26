"""EC2NodeClass (karpenter.k8s.aws/v1): how to launch nodes on AWS (subnets, security groups, AMIs,
kubelet settings, storage, metadata options)."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from apis.base import KubeModel
from apis.meta import Condition, ObjectMeta

API_VERSION: Final = "karpenter.k8s.aws/v1"
GROUP = "karpenter.k8s.aws"
KIND: Final = "EC2NodeClass"


class KubeletConfiguration(KubeModel):
    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: int | None = Field(default=None, ge=0)
    pods_per_core: int | None = Field(default=None, ge=0)
    system_reserved: dict[str, str] | None = None
    kube_reserved: dict[str, str] | None = None
    eviction_hard: dict[str, str] | None = None
    eviction_soft: dict[str, str] | None = None
    eviction_soft_grace_period: dict[str, str] | None = None
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = Field(default=None, alias="imageGCHighThresholdPercent")
    image_gc_low_threshold_percent: int | None = Field(default=None, alias="imageGCLowThresholdPercent")
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")


class SubnetSelectorTerm(KubeModel):
    tags: dict[str, str] | None = None
    id: str | None = None


class SecurityGroupSelectorTerm(KubeModel):
    tags: dict[str, str] | None = None
    id: str | None = None
    name: str | None = None


class CapacityReservationSelectorTerm(KubeModel):
    tags: dict[str, str] | None = None
    id: str | None = None
    owner_id: str | None = Field(default=None, alias="ownerID")
    instance_match_criteria: Literal["open", "targeted"] | None = None


class AMISelectorTerm(KubeModel):
    alias: str | None = None
    tags: dict[str, str] | None = None
    id: str | None = None
    name: str | None = None
    owner: str | None = None
    ssm_parameter: str | None = None


class EBS(KubeModel):
    delete_on_termination: bool | None = None
    encrypted: bool | None = None
    iops: int | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: int | None = None
    volume_initialization_rate: int | None = None
    volume_size: str | None = None
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = None


class BlockDeviceMapping(KubeModel):
    device_name: str | None = None
    ebs: EBS | None = None
    root_volume: bool | None = None


class MetadataOptions(KubeModel):
    http_endpoint: Literal["enabled", "disabled"] = "enabled"
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field(default="disabled", alias="httpProtocolIPv6")
    http_put_response_hop_limit: int = 1
    http_tokens: Literal["required", "optional"] = "required"


class NetworkInterface(KubeModel):
    device_index: int | None = None
    interface_type: Literal["interface", "efa-only"] | None = None
    network_card_index: int | None = None


class PlacementGroupSelector(KubeModel):
    id: str | None = None
    name: str | None = None


class ConnectionTracking(KubeModel):
    tcp_established_timeout: int | None = None
    udp_stream_timeout: int | None = None
    udp_timeout: int | None = None


class CPUOptions(KubeModel):
    nested_virtualization: Literal["enabled", "disabled"] | None = None


AMIFamily = Literal["AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"]


class EC2NodeClassSpec(KubeModel):
    kubelet: KubeletConfiguration | None = None
    subnet_selector_terms: list[SubnetSelectorTerm] = Field(min_length=1)
    security_group_selector_terms: list[SecurityGroupSelectorTerm] = Field(min_length=1)
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] | None = None
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    ami_selector_terms: list[AMISelectorTerm] = Field(default_factory=list)
    ami_family: AMIFamily | None = None
    user_data: str | None = None
    role: str | None = None
    instance_profile: str | None = None
    tags: dict[str, str] | None = None
    block_device_mappings: list[BlockDeviceMapping] | None = None
    instance_store_policy: Literal["RAID0"] | None = None
    detailed_monitoring: bool | None = None
    metadata_options: MetadataOptions = Field(default_factory=MetadataOptions)
    context: str | None = None
    ip_prefix_count: int | None = Field(default=None, alias="ipPrefixCount")
    network_interfaces: list[NetworkInterface] | None = None
    placement_group_selector: PlacementGroupSelector | None = None
    connection_tracking: ConnectionTracking | None = None
    cpu_options: CPUOptions | None = None


class ResolvedSubnet(KubeModel):
    id: str
    zone: str
    zone_id: str | None = Field(default=None, alias="zoneID")


class ResolvedSecurityGroup(KubeModel):
    id: str
    name: str | None = None


class ResolvedAMI(KubeModel):
    id: str
    name: str | None = None
    requirements: list[dict[str, object]] = Field(default_factory=list)
    deprecated: bool | None = None


class EC2NodeClassStatus(KubeModel):
    subnets: list[ResolvedSubnet] = Field(default_factory=list)
    security_groups: list[ResolvedSecurityGroup] = Field(default_factory=list)
    capacity_reservations: list[dict[str, object]] = Field(default_factory=list)
    amis: list[ResolvedAMI] = Field(default_factory=list)
    instance_profile: str | None = None
    conditions: list[Condition] = Field(default_factory=list)


class EC2NodeClass(KubeModel):
    api_version: Literal["karpenter.k8s.aws/v1"] = API_VERSION
    kind: Literal["EC2NodeClass"] = KIND
    metadata: ObjectMeta
    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus = Field(default_factory=EC2NodeClassStatus)

    @property
    def name(self) -> str:
        return self.metadata.name
