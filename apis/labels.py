"""Well-known label, annotation, taint and finalizer names, and Karpenter's restricted-label rules.

A NodePool may only put a label key on its nodes (template labels, requirement keys) when the key is
well known or lies outside the restricted domains; this mirrors Karpenter's `IsRestrictedLabel` and
the AWS provider's CEL rules on the NodePool CRD.
"""

from __future__ import annotations

# Kubernetes well-known labels.
HOSTNAME = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"
EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS = "node.kubernetes.io/exclude-from-external-load-balancers"

# Deprecated Kubernetes labels, translated to their stable keys in pod requirements.
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
BETA_ARCH = "beta.kubernetes.io/arch"
BETA_OS = "beta.kubernetes.io/os"
BETA_INSTANCE_TYPE = "beta.kubernetes.io/instance-type"
NORMALIZED_LABELS: dict[str, str] = {
    BETA_ZONE: ZONE,
    BETA_REGION: REGION,
    BETA_ARCH: ARCH,
    BETA_OS: OS,
    BETA_INSTANCE_TYPE: INSTANCE_TYPE,
}

# Karpenter (karpenter.sh).
NODEPOOL = "karpenter.sh/nodepool"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
REGISTERED = "karpenter.sh/registered"
INITIALIZED = "karpenter.sh/initialized"
DO_NOT_SYNC_TAINTS = "karpenter.sh/do-not-sync-taints"
NODEPOOL_HASH_ANNOTATION = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION_ANNOTATION = "karpenter.sh/nodepool-hash-version"
DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"
NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"
NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION = "karpenter.sh/nodeclaim-min-values-relaxed"
TERMINATION_FINALIZER = "karpenter.sh/termination"
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"

CAPACITY_TYPE_ON_DEMAND = "on-demand"
CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_RESERVED = "reserved"
CAPACITY_TYPES: tuple[str, ...] = (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_RESERVED)

# AWS (karpenter.k8s.aws).
NODECLASS = "karpenter.k8s.aws/ec2nodeclass"
NODECLASS_HASH_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
TAGGED_ANNOTATION = "karpenter.k8s.aws/tagged"
NODECLASS_TERMINATION_FINALIZER = "karpenter.k8s.aws/termination"
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
INSTANCE_CAPABILITY_FLEX = "karpenter.k8s.aws/instance-capability-flex"
INSTANCE_TENANCY = "karpenter.k8s.aws/instance-tenancy"
CAPACITY_RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = "karpenter.k8s.aws/capacity-reservation-type"
CAPACITY_RESERVATION_INTERRUPTIBLE = "karpenter.k8s.aws/capacity-reservation-interruptible"
PLACEMENT_GROUP_ID = "karpenter.k8s.aws/placement-group-id"
PLACEMENT_GROUP_PARTITION = "karpenter.k8s.aws/placement-group-partition"
ZONE_ID = "topology.k8s.aws/zone-id"

# Labels computed from an instance type (and its zone).
AWS_INSTANCE_LABELS: tuple[str, ...] = (
    INSTANCE_FAMILY, INSTANCE_CATEGORY, INSTANCE_GENERATION, INSTANCE_SIZE, INSTANCE_CPU,
    INSTANCE_CPU_MANUFACTURER, INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ, INSTANCE_MEMORY,
    INSTANCE_EBS_BANDWIDTH, INSTANCE_NETWORK_BANDWIDTH, INSTANCE_HYPERVISOR, INSTANCE_ENCRYPTION_IN_TRANSIT,
    INSTANCE_LOCAL_NVME, INSTANCE_GPU_NAME, INSTANCE_GPU_MANUFACTURER, INSTANCE_GPU_COUNT, INSTANCE_GPU_MEMORY,
    INSTANCE_ACCELERATOR_NAME, INSTANCE_ACCELERATOR_MANUFACTURER, INSTANCE_ACCELERATOR_COUNT, ZONE_ID,
    INSTANCE_CAPABILITY_FLEX, INSTANCE_TENANCY,
)  # fmt: skip

# Every AWS label a NodePool may select on (the CRD's karpenter.k8s.aws allow-list, plus the zone id).
AWS_WELL_KNOWN_LABELS: tuple[str, ...] = (
    *AWS_INSTANCE_LABELS,
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
    PLACEMENT_GROUP_ID,
    PLACEMENT_GROUP_PARTITION,
    NODECLASS,
)

CORE_WELL_KNOWN_LABELS: tuple[str, ...] = (
    NODEPOOL,
    ZONE,
    REGION,
    INSTANCE_TYPE,
    ARCH,
    OS,
    CAPACITY_TYPE,
    WINDOWS_BUILD,
)
WELL_KNOWN_LABELS: frozenset[str] = frozenset((*CORE_WELL_KNOWN_LABELS, *AWS_WELL_KNOWN_LABELS))
RESTRICTED_LABEL_DOMAINS: tuple[str, ...] = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
LABEL_DOMAIN_EXCEPTIONS: tuple[str, ...] = (
    "kops.k8s.io",
    "node.kubernetes.io",
    "node-restriction.kubernetes.io",
)
RESTRICTED_LABELS: frozenset[str] = frozenset((HOSTNAME,))

_EXAMPLES = f"{INSTANCE_TYPE}, {ZONE}, {CAPACITY_TYPE}, {INSTANCE_FAMILY}"


def label_domain(key: str) -> str:
    """The prefix before "/" ("" for an unprefixed key)."""
    return key.split("/", 1)[0] if "/" in key else ""


def normalize_label(key: str) -> str:
    """The stable key for a deprecated one (beta.kubernetes.io/arch -> kubernetes.io/arch), else the key."""
    return NORMALIZED_LABELS.get(key, key)


def _matching_domain(domain: str, candidates: tuple[str, ...]) -> str | None:
    # A plain suffix match, as Karpenter's (so "mykarpenter.sh" is restricted too).
    return next((c for c in candidates if domain.endswith(c)), None)


def is_restricted_node_label(key: str) -> bool:
    """True when only Karpenter may set this label on nodes (Karpenter's IsRestrictedNodeLabel).

    Well-known labels are restricted in this sense: Karpenter derives them from the instance.
    """
    if key in WELL_KNOWN_LABELS:
        return True
    domain = label_domain(key)
    if _matching_domain(domain, LABEL_DOMAIN_EXCEPTIONS):
        return False
    if _matching_domain(domain, RESTRICTED_LABEL_DOMAINS):
        return True
    return key in RESTRICTED_LABELS


def restricted_label_reason(key: str) -> str | None:
    """Why a NodePool may not use this key (as a template label or requirement key), or None when allowed.

    Well-known labels are allowed; so is any key outside the restricted domains (kubernetes.io, k8s.io,
    karpenter.sh, karpenter.k8s.aws, except node.kubernetes.io, node-restriction.kubernetes.io and
    kops.k8s.io). The wording follows Karpenter's: `label domain "karpenter.sh" is restricted`.
    """
    if key in WELL_KNOWN_LABELS or not is_restricted_node_label(key):
        return None
    fix = (
        f"specify a well-known label (e.g. {_EXAMPLES}) or a custom label that does not use a restricted "
        f"domain ({', '.join(sorted(RESTRICTED_LABEL_DOMAINS))})"
    )
    if key in RESTRICTED_LABELS:
        return f'label "{key}" is restricted; Karpenter sets it on each node itself, use a custom label instead'
    restricted = _matching_domain(label_domain(key), RESTRICTED_LABEL_DOMAINS)
    return f'label domain "{restricted}" is restricted: "{key}" is not a well-known label; {fix}'


def nodepool_label_reason(key: str) -> str | None:
    """Like `restricted_label_reason`, and also rejects karpenter.sh/nodepool, which Karpenter sets to the
    NodePool's own name (NodePool template labels and requirement keys)."""
    if key == NODEPOOL:
        return f'label "{NODEPOOL}" is restricted; Karpenter sets it to the NodePool\'s name, remove it'
    return restricted_label_reason(key)
