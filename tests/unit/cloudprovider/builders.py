"""Builders for EC2 InstanceTypeInfo dicts, node classes and launch requests (unit tests)."""

from __future__ import annotations

from typing import Any

from apis.ec2nodeclass import EC2NodeClass


def instance_type_info(
    name: str = "m5.large",
    vcpus: int = 2,
    memory_mib: int = 8192,
    arch: str = "x86_64",
    enis: int = 3,
    ipv4_per_eni: int = 10,
    **extra: Any,
) -> dict[str, Any]:
    """A DescribeInstanceTypes entry with the fields the conversion reads (m5.large by default)."""
    info: dict[str, Any] = {
        "InstanceType": name,
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": memory_mib},
        "ProcessorInfo": {"SupportedArchitectures": [arch], "Manufacturer": "Intel", "SustainedClockSpeedInGhz": 3.1},
        "NetworkInfo": {
            "MaximumNetworkInterfaces": enis,
            "Ipv4AddressesPerInterface": ipv4_per_eni,
            "EncryptionInTransitSupported": False,
            "NetworkCards": [{"BaselineBandwidthInGbps": 0.75}],
            "EfaSupported": False,
        },
        "EbsInfo": {"EbsOptimizedInfo": {"MaximumBandwidthInMbps": 4750}},
        "Hypervisor": "nitro",
        "SupportedUsageClasses": ["on-demand", "spot"],
    }
    info.update(extra)
    return info


def node_class(**spec: Any) -> EC2NodeClass:
    selector = [{"tags": {"karpenter.sh/discovery": "c"}}]
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "role": "KarpenterNodeRole-c",
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "subnetSelectorTerms": selector,
                "securityGroupSelectorTerms": selector,
                **spec,
            },
        }
    )
