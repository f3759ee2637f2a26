"""Launch templates: one per (node class, AMI, user data, security groups, profile), named by a content hash.

The name `karpenter.k8s.aws/<hash>` makes "ensure" idempotent: a template with that name has exactly this
content, so it is created once and reused by every launch that needs it.

Each template is tagged with the launch tags (the cluster's `kubernetes.io/cluster/<cluster>=owned`, the
node class's `karpenter.k8s.aws/ec2nodeclass`, the NodePool) and with `nodeflow.dev/ec2nodeclass-hash`,
the node class's static hash at creation, which only nodeflow writes. Those tags are how nodeflow finds
its own templates to delete them: all of a node class's when the node class is deleted, and, periodically,
those made under a hash no EC2NodeClass has any more (`is_stale`). A template it did not create lacks the
hash tag and is never touched.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from apis.ec2nodeclass import EBS, EC2NodeClass, NetworkInterface
from apis.labels import NODECLASS
from apis.storage import launch_block_devices
from apis.values.quantity import to_units
from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.sdk import EC2API
from cloudprovider.errors import CloudProviderError
from cloudprovider.types import TAG_CLUSTER_PREFIX

GIB = 2**30
NAME_PREFIX = "karpenter.k8s.aws/"
TAG_NODECLASS_HASH = "nodeflow.dev/ec2nodeclass-hash"  # on the templates nodeflow creates, and nothing else
NOT_FOUND_CODES = ("InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound")


def _ebs(ebs: EBS) -> dict[str, Any]:
    out: dict[str, Any] = {
        "DeleteOnTermination": True if ebs.delete_on_termination is None else ebs.delete_on_termination
    }
    if ebs.volume_size:
        out["VolumeSize"] = math.ceil(to_units("memory", ebs.volume_size) / GIB)
    optional = {
        "VolumeType": ebs.volume_type,
        "Encrypted": ebs.encrypted,
        "Iops": ebs.iops,
        "KmsKeyId": ebs.kms_key_id,
        "SnapshotId": ebs.snapshot_id,
        "Throughput": ebs.throughput,
        "VolumeInitializationRate": ebs.volume_initialization_rate,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    return out


@dataclass(frozen=True)
class LaunchTemplateSpec:
    """What goes into one launch template. With `capacity_reservation_id`, launches target that
    reservation (and buy capacity-block capacity when `capacity_reservation_type` is capacity-block).
    With `placement_group_id`, launches go into that placement group (EC2 picks the partition of a
    partition group)."""

    image_id: str
    user_data: str
    security_group_ids: tuple[str, ...]
    instance_profile: str
    node_class: EC2NodeClass
    family: str
    tags: tuple[tuple[str, str], ...]
    capacity_reservation_id: str = ""
    capacity_reservation_type: str = ""
    placement_group_id: str = ""

    def data(self) -> dict[str, Any]:
        spec = self.node_class.spec
        metadata = spec.metadata_options
        data: dict[str, Any] = {
            "ImageId": self.image_id,
            "UserData": base64.b64encode(self.user_data.encode()).decode(),
            "IamInstanceProfile": {"Name": self.instance_profile},
            "MetadataOptions": {
                "HttpEndpoint": metadata.http_endpoint,
                "HttpProtocolIpv6": metadata.http_protocol_ipv6,
                "HttpPutResponseHopLimit": metadata.http_put_response_hop_limit,
                "HttpTokens": metadata.http_tokens,
            },
            "Monitoring": {"Enabled": bool(spec.detailed_monitoring)},
            "TagSpecifications": [{"ResourceType": "network-interface", "Tags": tag_list(self.tags)}],
        }
        devices = launch_block_devices(self.node_class, self.family)
        if devices:
            data["BlockDeviceMappings"] = [
                {"DeviceName": d.device_name or "/dev/xvda", "Ebs": _ebs(d.ebs or EBS())} for d in devices
            ]
        interfaces = network_interfaces(self.node_class, list(self.security_group_ids))
        if interfaces:
            data["NetworkInterfaces"] = interfaces
        else:
            data["SecurityGroupIds"] = list(self.security_group_ids)
        if spec.cpu_options is not None and spec.cpu_options.nested_virtualization is not None:
            data["CpuOptions"] = {"NestedVirtualization": spec.cpu_options.nested_virtualization}
        if self.capacity_reservation_id:
            data["CapacityReservationSpecification"] = {
                "CapacityReservationTarget": {"CapacityReservationId": self.capacity_reservation_id}
            }
            if self.capacity_reservation_type == "capacity-block":
                data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        if self.placement_group_id:
            data["Placement"] = {"GroupId": self.placement_group_id}
        return data

    def create_request(self) -> dict[str, Any]:
        """The CreateLaunchTemplate arguments that make this template."""
        return {
            "LaunchTemplateName": self.name(),
            "LaunchTemplateData": self.data(),
            "TagSpecifications": [{"ResourceType": "launch-template", "Tags": tag_list(self.resource_tags())}],
        }

    def resource_tags(self) -> tuple[tuple[str, str], ...]:
        """The template's own tags: the launch tags and the node class's static hash (TAG_NODECLASS_HASH)."""
        return (*self.tags, (TAG_NODECLASS_HASH, self.node_class.static_hash()))

    def name(self) -> str:
        """A hash of the content, the node class and its static hash: a template made under another hash
        (which the stale sweep deletes) never has the name of a current one."""
        content = [self.data(), self.node_class.name, self.node_class.static_hash()]
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
        return NAME_PREFIX + digest[:32]


def network_interfaces(node_class: EC2NodeClass, groups: list[str]) -> list[dict[str, Any]]:
    """The launch template's NetworkInterfaces, or [] when the node class needs none (the security groups
    then go on the template). EC2 refuses security groups both on the template and on an interface, so
    every interface carries them.

    - `networkInterfaces` declares the interfaces, each on its network card and device index; an
      `efa-only` interface is EFA without an IP address.
    - Otherwise `associatePublicIPAddress`, `ipPrefixCount` or `connectionTracking` make one primary
      interface (device index 0).
    - The primary interface (card 0, device 0) says whether it gets a public IPv4 address and how many
      IPv4 prefixes it gets; `connectionTracking` applies to every interface but `efa-only` ones, as the
      EC2NodeClass API documents."""
    spec = node_class.spec
    declared = spec.network_interfaces or []
    if not declared and all(
        value is None for value in (spec.associate_public_ip_address, spec.ip_prefix_count, spec.connection_tracking)
    ):
        return []
    interfaces: list[dict[str, Any]] = []
    ordered: list[NetworkInterface | None] = [*sorted(declared, key=lambda i: (i.network_card_index, i.device_index))]
    for declared_interface in ordered or [None]:
        entry: dict[str, Any] = {"DeviceIndex": 0}
        efa_only = False
        if declared_interface is not None:
            entry = {
                "NetworkCardIndex": declared_interface.network_card_index,
                "DeviceIndex": declared_interface.device_index,
            }
            efa_only = declared_interface.interface_type == "efa-only"
            if efa_only:
                entry["InterfaceType"] = "efa-only"
        primary = entry.get("NetworkCardIndex", 0) == 0 and entry["DeviceIndex"] == 0
        if primary and spec.associate_public_ip_address is not None:
            entry["AssociatePublicIpAddress"] = spec.associate_public_ip_address
        if primary and spec.ip_prefix_count is not None:
            entry["Ipv4PrefixCount"] = spec.ip_prefix_count
        tracking = spec.connection_tracking
        if tracking is not None and not efa_only:
            timeouts = {
                "TcpEstablishedTimeout": tracking.tcp_established_timeout,
                "UdpStreamTimeout": tracking.udp_stream_timeout,
                "UdpTimeout": tracking.udp_timeout,
            }
            entry["ConnectionTrackingSpecification"] = {k: v for k, v in timeouts.items() if v is not None}
        entry["Groups"] = groups
        interfaces.append(entry)
    return interfaces


def tag_list(tags: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags]


class LaunchTemplates:
    """Ensures launch templates exist; remembers the names it has seen so each is described at most once."""

    def __init__(self, ec2: EC2API) -> None:
        self._ec2 = ec2
        self._known: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, spec: LaunchTemplateSpec) -> str:
        """The template's name, creating it when missing."""
        name = spec.name()
        with self._lock:
            if name in self._known:
                return name
        if not self._exists(name):
            try:
                call("CreateLaunchTemplate", self._ec2.create_launch_template, **spec.create_request())
            except CloudProviderError as error:
                if not has_code(
                    error, "InvalidLaunchTemplateName.AlreadyExistsException"
                ):  # lost a race with another worker: same content
                    raise
        with self._lock:
            self._known.add(name)
        return name

    def forget(self) -> None:
        """Drop the memory of ensured templates (after one was found missing)."""
        with self._lock:
            self._known.clear()

    def _exists(self, name: str) -> bool:
        try:
            found = call("DescribeLaunchTemplates", self._ec2.describe_launch_templates, LaunchTemplateNames=[name])
        except CloudProviderError as error:
            if has_code(error, *NOT_FOUND_CODES):
                return False
            raise
        return bool(found.get("LaunchTemplates"))

    def owned(self, cluster_name: str, node_class_name: str | None = None) -> list[dict[str, Any]]:
        """The templates nodeflow created for this cluster (`is_owned`), for one node class when named;
        DescribeLaunchTemplates pages followed to the end."""
        filters = [
            {"Name": f"tag:{TAG_CLUSTER_PREFIX}{cluster_name}", "Values": ["owned"]},
            {"Name": "tag-key", "Values": [TAG_NODECLASS_HASH]},
        ]
        if node_class_name is not None:
            filters.append({"Name": f"tag:{NODECLASS}", "Values": [node_class_name]})
        found: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = call(
                "DescribeLaunchTemplates",
                self._ec2.describe_launch_templates,
                Filters=filters,
                **({"NextToken": token} if token else {}),
            )
            found += [t for t in page.get("LaunchTemplates", []) if is_owned(t, cluster_name)]
            token = page.get("NextToken")
            if not token:
                return found

    def delete(self, templates: list[dict[str, Any]]) -> list[str]:
        """Delete these templates (as DescribeLaunchTemplates returned them) by id; returns their names,
        those already gone included. Forgets every ensured name, so a later launch that needs one of
        them creates it again."""
        deleted: list[str] = []
        for template in templates:
            try:
                call(
                    "DeleteLaunchTemplate",
                    self._ec2.delete_launch_template,
                    LaunchTemplateId=template["LaunchTemplateId"],
                )
            except CloudProviderError as error:
                if not has_code(error, *NOT_FOUND_CODES):
                    raise
            deleted.append(str(template.get("LaunchTemplateName", template["LaunchTemplateId"])))
        if templates:
            self.forget()
        return deleted


def tags_of(template: Mapping[str, Any]) -> dict[str, str]:
    return {str(t.get("Key")): str(t.get("Value", "")) for t in template.get("Tags") or []}


def is_owned(template: Mapping[str, Any], cluster_name: str) -> bool:
    """Whether nodeflow created this template for this cluster: named `karpenter.k8s.aws/...`, tagged
    `kubernetes.io/cluster/<cluster>=owned`, with a node class and a TAG_NODECLASS_HASH tag."""
    tags = tags_of(template)
    return (
        str(template.get("LaunchTemplateName", "")).startswith(NAME_PREFIX)
        and tags.get(TAG_CLUSTER_PREFIX + cluster_name) == "owned"
        and bool(tags.get(NODECLASS))
        and TAG_NODECLASS_HASH in tags
    )


def is_stale(
    template: Mapping[str, Any], current_hashes: Mapping[str, str | None], now: datetime, min_age: timedelta
) -> bool:
    """Whether an owned template (`is_owned`) is no longer used by any EC2NodeClass: its node class does
    not exist (is not in `current_hashes`, node class name -> static hash), or exists with another static
    hash; and it was created at least `min_age` before `now`, so a launch that read the node class just
    before it changed is not raced. A node class whose hash is unknown (None: its spec does not parse)
    keeps its templates; so does a template without a creation time."""
    tags = tags_of(template)
    node_class = tags.get(NODECLASS, "")
    if node_class in current_hashes and (
        current_hashes[node_class] is None or current_hashes[node_class] == tags.get(TAG_NODECLASS_HASH)
    ):
        return False
    created = template.get("CreateTime")
    return isinstance(created, datetime) and now - created >= min_age
