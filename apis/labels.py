"""Well-known label, annotation, taint and finalizer names, and Karpenter's restricted-label rules."""

from __future__ import annotations

# Kubernetes well-known labels.
HOSTNAME = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"

# Karpenter (karpenter.sh).
NODEPOOL = "karpenter.sh/nodepool"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
REGISTERED = "karpenter.sh/registered"
INITIALIZED = "karpenter.sh/initialized"
NODEPOOL_HASH_ANNOTATION = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION_ANNOTATION = "karpenter.sh/nodepool-hash-version"
DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"
TERMINATION_FINALIZER = "karpenter.sh/termination"
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"

CAPACITY_TYPE_ON_DEMAND = "on-demand"
CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_RESERVED = "reserved"

# AWS (karpenter.k8s.aws).
NODECLASS = "karpenter.k8s.aws/ec2nodeclass"
NODECLASS_HASH_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
INSTANCE_CATEGORY = "karpenter.k8s.aws/instance-category"
INSTANCE_GENERATION = "karpenter.k8s.aws/instance-generation"
INSTANCE_SIZE = "karpenter.k8s.aws/instance-size"
INSTANCE_CPU = "karpenter.k8s.aws/instance-cpu"
INSTANCE_CPU_MANUFACTURER = "karpenter.k8s.aws/instance-cpu-manufacturer"
INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
INSTANCE_MEMORY = "karpenter.k8s.aws/instance-memory"
INSTANCE_EBS_BANDWIDTH = "karpenter.k8s.aws/instance-ebs-bandwidth"
INSTANCE_NETWORK_BANDWIDTH = "karpenter.k8s.aws/instance-network-bandwidth"
INSTANCE_HYPERVISOR = "karpenter.k8s.aws/instance-hypervisor"
INSTANCE_ENCRYPTION_IN_TRANSIT = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
INSTANCE_LOCAL_NVME = "karpenter.k8s.aws/instance-local-nvme"
INSTANCE_GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = "karpenter.k8s.aws/instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
INSTANCE_GPU_MEMORY = "karpenter.k8s.aws/instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = "karpenter.k8s.aws/instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = "karpenter.k8s.aws/instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = "karpenter.k8s.aws/instance-accelerator-count"
ZONE_ID = "topology.k8s.aws/zone-id"

AWS_INSTANCE_LABELS: tuple[str, ...] = (
    INSTANCE_FAMILY, INSTANCE_CATEGORY, INSTANCE_GENERATION, INSTANCE_SIZE, INSTANCE_CPU,
    INSTANCE_CPU_MANUFACTURER, INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ, INSTANCE_MEMORY,
    INSTANCE_EBS_BANDWIDTH, INSTANCE_NETWORK_BANDWIDTH, INSTANCE_HYPERVISOR, INSTANCE_ENCRYPTION_IN_TRANSIT,
    INSTANCE_LOCAL_NVME, INSTANCE_GPU_NAME, INSTANCE_GPU_MANUFACTURER, INSTANCE_GPU_COUNT, INSTANCE_GPU_MEMORY,
    INSTANCE_ACCELERATOR_NAME, INSTANCE_ACCELERATOR_MANUFACTURER, INSTANCE_ACCELERATOR_COUNT, ZONE_ID,
)  # fmt: skip

WELL_KNOWN_LABELS: frozenset[str] = frozenset(
    (NODEPOOL, ZONE, REGION, INSTANCE_TYPE, ARCH, OS, CAPACITY_TYPE, WINDOWS_BUILD, *AWS_INSTANCE_LABELS)
)
RESTRICTED_LABEL_DOMAINS: tuple[str, ...] = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
LABEL_DOMAIN_EXCEPTIONS: tuple[str, ...] = (
    "kops.k8s.io",
    "node.kubernetes.io",
    "node-restriction.kubernetes.io",
)
RESTRICTED_LABELS: frozenset[str] = frozenset((HOSTNAME,))


def label_domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def is_restricted_node_label(key: str) -> bool:
    """True when a NodePool may not set this label on nodes (Karpenter's IsRestrictedNodeLabel)."""
    if key in WELL_KNOWN_LABELS:
        return True
    domain = label_domain(key)
    if any(domain.endswith(exception) for exception in LABEL_DOMAIN_EXCEPTIONS):
        return False
    if any(domain.endswith(restricted) for restricted in RESTRICTED_LABEL_DOMAINS):
        return True
    return key in RESTRICTED_LABELS


def restricted_label_reason(key: str) -> str | None:
    """Why a requirement on this key can never be satisfied by a NodePool, or None when allowed."""
    if key in WELL_KNOWN_LABELS:
        return None
    if is_restricted_node_label(key):
        return (
            f'label "{key}" is restricted; use a well-known label (e.g. {ZONE}, {INSTANCE_TYPE}, '
            f"{CAPACITY_TYPE}) or a custom label outside the domains {', '.join(RESTRICTED_LABEL_DOMAINS)}"
        )
    return None
