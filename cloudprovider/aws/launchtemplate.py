"""Launch templates: one per (node class, AMI, user data, security groups, profile), named by a content hash.

The name `karpenter.k8s.aws/<hash>` makes "ensure" idempotent: a template with that name has exactly this
content, so it is created once and reused by every launch that needs it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import threading
from dataclasses import dataclass
from typing import Any

from apis.ec2nodeclass import EBS, EC2NodeClass
from apis.quantity import to_units
from apis.storage import block_devices
from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.sdk import EC2API
from cloudprovider.errors import CloudProviderError

GIB = 2**30
NAME_PREFIX = "karpenter.k8s.aws/"


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
    """What goes into one launch template."""

    image_id: str
    user_data: str
    security_group_ids: tuple[str, ...]
    instance_profile: str
    node_class: EC2NodeClass
    family: str
    tags: tuple[tuple[str, str], ...]

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
            "BlockDeviceMappings": [
                {"DeviceName": d.device_name or "/dev/xvda", "Ebs": _ebs(d.ebs or EBS())}
                for d in block_devices(self.node_class, self.family)
            ],
            "Monitoring": {"Enabled": bool(spec.detailed_monitoring)},
            "TagSpecifications": [{"ResourceType": "network-interface", "Tags": _tags(self.tags)}],
        }
        if spec.associate_public_ip_address is not None:
            # As Karpenter: the primary interface says whether it gets a public IPv4 address, and carries the
            # security groups (EC2 refuses them beside a network interface).
            data["NetworkInterfaces"] = [
                {
                    "DeviceIndex": 0,
                    "AssociatePublicIpAddress": spec.associate_public_ip_address,
                    "Groups": list(self.security_group_ids),
                }
            ]
        else:
            data["SecurityGroupIds"] = list(self.security_group_ids)
        if spec.cpu_options is not None and spec.cpu_options.nested_virtualization is not None:
            data["CpuOptions"] = {"NestedVirtualization": spec.cpu_options.nested_virtualization}
        return data

    def name(self) -> str:
        digest = hashlib.sha256(json.dumps([self.data(), self.node_class.name], sort_keys=True).encode()).hexdigest()
        return NAME_PREFIX + digest[:32]


def _tags(tags: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
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
                call(
                    "CreateLaunchTemplate",
                    self._ec2.create_launch_template,
                    LaunchTemplateName=name,
                    LaunchTemplateData=spec.data(),
                    TagSpecifications=[{"ResourceType": "launch-template", "Tags": _tags(spec.tags)}],
                )
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
            if has_code(error, "InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound"):
                return False
            raise
        return bool(found.get("LaunchTemplates"))
