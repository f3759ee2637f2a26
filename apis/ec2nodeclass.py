"""EC2NodeClass (karpenter.k8s.aws/v1): how to launch nodes on AWS (subnets, security groups, AMIs,
kubelet settings, storage, metadata options).

Validation follows the CRD's patterns, ranges and CEL rules (messages say which field and how to fix it).
One deliberate leniency, in the models and in nodeflow's CRD: `amiSelectorTerms` may be omitted when
`amiFamily` is set, and the family's latest AMIs are used (the alias `<family>@latest`; a Custom family has
none, so such a node class is not ready and says so). Karpenter's v1 CRD requires at least one term.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field, model_validator

from apis.base import KubeModel
from apis.cel import CelRule, RuleTable, cel_list
from apis.labels import NODECLASS_HASH_ANNOTATION, NODECLASS_HASH_VERSION_ANNOTATION
from apis.meta import Condition, ObjectMeta, get_condition
from apis.values.quantity import QUANTITY_PATTERN, parse_quantity
from apis.values.syntax import SchemaExtra, field_error

API_VERSION: Final = "karpenter.k8s.aws/v1"
GROUP = "karpenter.k8s.aws"
KIND: Final = "EC2NodeClass"

MAX_SELECTOR_TERMS = 30
MAX_SELECTOR_TAGS = 20
EVICTION_SIGNALS: tuple[str, ...] = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES: tuple[str, ...] = ("cpu", "memory", "ephemeral-storage", "pid")
RESTRICTED_TAG_KEYS: tuple[str, ...] = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)
RESTRICTED_TAG_PREFIX = "kubernetes.io/cluster"
EVICTION_PATTERN = r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||" + QUANTITY_PATTERN[1:-1] + r")$"
VOLUME_SIZE_PATTERN = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)
_EVICTION = re.compile(EVICTION_PATTERN)
_VOLUME_SIZE = re.compile(VOLUME_SIZE_PATTERN)

# The version of `EC2NodeClass.static_hash`, stamped next to it on each NodeClaim. nodeflow's own algorithm,
# not Karpenter's: a claim stamped under another version is re-stamped, not found drifted.
STATIC_HASH_VERSION = "nodeflow-v1"
# Karpenter's EC2NodeClass status conditions of the parts its Ready depends on.
SUBNETS_READY = "SubnetsReady"
SECURITY_GROUPS_READY = "SecurityGroupsReady"
AMIS_READY = "AMIsReady"
INSTANCE_PROFILE_READY = "InstanceProfileReady"
PART_CONDITIONS = (AMIS_READY, SUBNETS_READY, SECURITY_GROUPS_READY, INSTANCE_PROFILE_READY)
# Whether the controller may launch with it (cloudprovider.aws.launch.authorization), once the parts resolved.
VALIDATION_SUCCEEDED = "ValidationSucceeded"
# Spec fields whose drift is judged by what they resolve to (AMIs, subnets, security groups, capacity
# reservations, the placement group), not by their text; amiFamily is hashed as the family in effect.
DYNAMIC_SPEC_FIELDS = frozenset(
    {
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "capacityReservationSelectorTerms",
        "amiSelectorTerms",
        "placementGroupSelector",
    }
)

# alias family -> the amiFamily it implies.
ALIAS_FAMILIES: dict[str, str] = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
_ALIAS = re.compile(r"^[a-zA-Z0-9]+@.+$")


def _pattern(regex: str, what: str, example: str) -> AfterValidator:
    """A validator for Karpenter's pattern (a search, as the API server's); pair it with `SchemaExtra`."""
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if not compiled.search(value):
            raise ValueError(f'invalid {what} "{value}": expected the form "{example}"')
        return value

    return AfterValidator(check)


SUBNET_ID_PATTERN = r"subnet-[0-9a-z]+"
SECURITY_GROUP_ID_PATTERN = r"sg-[0-9a-z]+"
AMI_ID_PATTERN = r"ami-[0-9a-z]+"
CAPACITY_RESERVATION_ID_PATTERN = r"^cr-[0-9a-z]+$"
OWNER_ID_PATTERN = r"^[0-9]{12}$"
PLACEMENT_GROUP_ID_PATTERN = r"^pg-[0-9a-z]+$"
SubnetId = Annotated[
    str,
    _pattern(SUBNET_ID_PATTERN, "subnet id", "subnet-0123456789abcdef0"),
    SchemaExtra({"pattern": SUBNET_ID_PATTERN}),
]
SecurityGroupId = Annotated[
    str,
    _pattern(SECURITY_GROUP_ID_PATTERN, "security group id", "sg-0123456789abcdef0"),
    SchemaExtra({"pattern": SECURITY_GROUP_ID_PATTERN}),
]
AmiId = Annotated[
    str, _pattern(AMI_ID_PATTERN, "AMI id", "ami-0123456789abcdef0"), SchemaExtra({"pattern": AMI_ID_PATTERN})
]
CapacityReservationId = Annotated[
    str,
    _pattern(CAPACITY_RESERVATION_ID_PATTERN, "capacity reservation id", "cr-0123456789abcdef0"),
    SchemaExtra({"pattern": CAPACITY_RESERVATION_ID_PATTERN}),
]
OwnerId = Annotated[
    str, _pattern(OWNER_ID_PATTERN, "owner id", "123456789012"), SchemaExtra({"pattern": OWNER_ID_PATTERN})
]
PlacementGroupId = Annotated[
    str,
    _pattern(PLACEMENT_GROUP_ID_PATTERN, "placement group id", "pg-0123456789abcdef0"),
    SchemaExtra({"pattern": PLACEMENT_GROUP_ID_PATTERN}),
]


def _selector_tags(tags: dict[str, str]) -> dict[str, str]:
    if len(tags) > MAX_SELECTOR_TAGS:
        raise ValueError(f"at most {MAX_SELECTOR_TAGS} tags per selector term, got {len(tags)}")
    if any(key == "" or value == "" for key, value in tags.items()):
        raise ValueError('empty tag keys or values aren\'t supported; use "*" as the value to match any value')
    return tags


SelectorTags = Annotated[
    dict[str, str], AfterValidator(_selector_tags), SchemaExtra({"maxProperties": MAX_SELECTOR_TAGS})
]


def _eviction_map(name: str) -> AfterValidator:
    def check(values: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(values) - set(EVICTION_SIGNALS))
        if unknown:
            raise ValueError(f"unknown signal {unknown[0]!r}: valid keys for {name} are {list(EVICTION_SIGNALS)}")
        for signal, threshold in values.items():
            if name != "evictionSoftGracePeriod" and not _EVICTION.fullmatch(threshold):
                raise ValueError(
                    f'invalid threshold "{threshold}" for {signal}: use a percentage ("10%") or a quantity'
                )
        return values

    return AfterValidator(check)


def _reserved_map(name: str) -> AfterValidator:
    def check(values: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(values) - set(RESERVED_RESOURCES))
        if unknown:
            raise ValueError(f"unknown resource {unknown[0]!r}: valid keys for {name} are {list(RESERVED_RESOURCES)}")
        for resource, quantity in values.items():
            if quantity.startswith("-"):
                raise ValueError(f"{name} value cannot be a negative resource quantity ({resource}: {quantity})")
            parse_quantity(quantity)
        return values

    return AfterValidator(check)


class KubeletConfiguration(KubeModel):
    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: int | None = Field(default=None, ge=0)
    pods_per_core: int | None = Field(default=None, ge=0)
    system_reserved: Annotated[dict[str, str], _reserved_map("systemReserved")] | None = None
    kube_reserved: Annotated[dict[str, str], _reserved_map("kubeReserved")] | None = None
    eviction_hard: Annotated[dict[str, str], _eviction_map("evictionHard")] | None = None
    eviction_soft: Annotated[dict[str, str], _eviction_map("evictionSoft")] | None = None
    eviction_soft_grace_period: Annotated[dict[str, str], _eviction_map("evictionSoftGracePeriod")] | None = None
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = Field(default=None, alias="imageGCHighThresholdPercent", ge=0, le=100)
    image_gc_low_threshold_percent: int | None = Field(default=None, alias="imageGCLowThresholdPercent", ge=0, le=100)
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")

    @model_validator(mode="after")
    def _consistent(self) -> KubeletConfiguration:
        high, low = self.image_gc_high_threshold_percent, self.image_gc_low_threshold_percent
        if high is not None and low is not None and high <= low:
            raise field_error(
                "imageGCHighThresholdPercent",
                f"imageGCHighThresholdPercent ({high}) must be greater than imageGCLowThresholdPercent ({low})",
            )
        soft, grace = set(self.eviction_soft or {}), set(self.eviction_soft_grace_period or {})
        if soft - grace:
            raise field_error(
                "evictionSoftGracePeriod",
                f"evictionSoft {sorted(soft - grace)[0]} has no matching grace period; add it",
            )
        if grace - soft:
            raise field_error(
                "evictionSoft",
                f"evictionSoftGracePeriod {sorted(grace - soft)[0]} has no matching evictionSoft; add it",
            )
        return self


class SubnetSelectorTerm(KubeModel):
    """Selects subnets by tags (all must match) or by id; not both."""

    tags: SelectorTags | None = None
    id: SubnetId | None = None

    @model_validator(mode="after")
    def _tags_or_id(self) -> SubnetSelectorTerm:
        if self.tags is None and self.id is None:
            raise ValueError("expected at least one, got none, ['tags', 'id']; select subnets by tags or by id")
        if self.tags is not None and self.id is not None:
            raise field_error("id", "'id' is mutually exclusive, cannot be set with 'tags' in a subnet selector term")
        return self


class SecurityGroupSelectorTerm(KubeModel):
    """Selects security groups by tags, id or name (id and name exclusive with the others)."""

    tags: SelectorTags | None = None
    id: SecurityGroupId | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _one_selector(self) -> SecurityGroupSelectorTerm:
        if self.tags is None and self.id is None and self.name is None:
            raise ValueError("expected at least one, got none, ['tags', 'id', 'name']; select security groups by one")
        if self.id is not None and (self.tags is not None or self.name is not None):
            raise field_error("id", "'id' is mutually exclusive, cannot be set with 'tags' or 'name' in this term")
        if self.name is not None and self.tags is not None:
            raise field_error("name", "'name' is mutually exclusive, cannot be set with 'tags' in this term")
        return self


class CapacityReservationSelectorTerm(KubeModel):
    """Selects capacity reservations by id (alone), or by tags, ownerID and instanceMatchCriteria (ANDed)."""

    tags: SelectorTags | None = None
    id: CapacityReservationId | None = None
    owner_id: OwnerId | None = Field(default=None, alias="ownerID")
    instance_match_criteria: Literal["open", "targeted"] | None = None

    @model_validator(mode="after")
    def _one_selector(self) -> CapacityReservationSelectorTerm:
        if self.tags is None and self.id is None and self.instance_match_criteria is None:
            raise ValueError("expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']")
        if self.id is not None and (
            self.tags is not None or self.owner_id is not None or self.instance_match_criteria is not None
        ):
            raise field_error("id", "'id' is mutually exclusive, cannot be set along with other fields in this term")
        return self


def _alias(value: str) -> str:
    if len(value) > 30 or not _ALIAS.fullmatch(value):
        raise ValueError(f"'alias' \"{value}\" is improperly formatted, must match the format 'family@version'")
    family, version = value.split("@", 1)
    if family not in ALIAS_FAMILIES:
        raise ValueError(
            f'family "{family}" is not supported, must be one of the following: {", ".join(ALIAS_FAMILIES)}'
        )
    if family.startswith("windows") and version != "latest":
        raise ValueError(f"windows families may only specify version 'latest'; use \"{family}@latest\"")
    return value


class AMISelectorTerm(KubeModel):
    """An AMI by alias (`family@version`, alone), id (alone), or tags/name/owner/ssmParameter."""

    alias: Annotated[str, AfterValidator(_alias), SchemaExtra({"maxLength": 30})] | None = None
    tags: SelectorTags | None = None
    id: AmiId | None = None
    name: str | None = None
    owner: str | None = None
    ssm_parameter: str | None = None

    @model_validator(mode="after")
    def _selector_shape(self) -> AMISelectorTerm:
        if all(v is None for v in (self.tags, self.id, self.name, self.alias, self.ssm_parameter)):
            raise ValueError("expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']")
        others = (self.tags, self.name, self.owner)
        if self.id is not None and (self.alias is not None or any(v is not None for v in others)):
            raise field_error("id", "'id' is mutually exclusive, cannot be set with a combination of other fields")
        if self.alias is not None and any(v is not None for v in others):
            raise field_error(
                "alias", "'alias' is mutually exclusive, cannot be set with a combination of other fields"
            )
        return self


class EBS(KubeModel):
    delete_on_termination: bool | None = None
    encrypted: bool | None = None
    iops: int | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: int | None = None
    volume_initialization_rate: int | None = Field(default=None, ge=100, le=300)
    volume_size: (
        Annotated[
            str, _pattern(VOLUME_SIZE_PATTERN, "volume size", "20Gi"), SchemaExtra({"pattern": VOLUME_SIZE_PATTERN})
        ]
        | None
    ) = None
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = None

    @model_validator(mode="after")
    def _source(self) -> EBS:
        if self.snapshot_id is None and self.volume_size is None:
            raise ValueError("snapshotID or volumeSize must be defined")
        if self.volume_initialization_rate is not None and not self.snapshot_id:
            raise field_error("snapshotID", "snapshotID must be set when volumeInitializationRate is set")
        return self


class BlockDeviceMapping(KubeModel):
    device_name: str | None = None
    ebs: EBS | None = None
    root_volume: bool | None = None


class MetadataOptions(KubeModel):
    http_endpoint: Literal["enabled", "disabled"] = "enabled"
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field(default="disabled", alias="httpProtocolIPv6")
    http_put_response_hop_limit: int = Field(default=1, ge=1, le=64)
    http_tokens: Literal["required", "optional"] = "required"


class NetworkInterface(KubeModel):
    device_index: int = Field(ge=0)
    interface_type: Literal["interface", "efa-only"]
    network_card_index: int = Field(ge=0)


class PlacementGroupSelector(KubeModel):
    id: PlacementGroupId | None = None
    name: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _name_xor_id(self) -> PlacementGroupSelector:
        if self.id is None and self.name is None:
            raise ValueError("expected at least one, got none, ['name', 'id']")
        if self.id is not None and self.name is not None:
            raise field_error("id", "'name' and 'id' are mutually exclusive; keep one")
        return self


class ConnectionTracking(KubeModel):
    tcp_established_timeout: int | None = Field(default=None, ge=60, le=432000)
    udp_stream_timeout: int | None = Field(default=None, ge=60, le=180)
    udp_timeout: int | None = Field(default=None, ge=30, le=60)

    @model_validator(mode="after")
    def _any_set(self) -> ConnectionTracking:
        if self.tcp_established_timeout is None and self.udp_stream_timeout is None and self.udp_timeout is None:
            raise ValueError("at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set")
        return self


class CPUOptions(KubeModel):
    nested_virtualization: Literal["enabled", "disabled"] | None = None


AMIFamily = Literal["AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"]


def _not_empty(what: str) -> AfterValidator:
    def check(value: str) -> str:
        if value == "":
            raise ValueError(f"{what} cannot be empty")
        return value

    return AfterValidator(check)


def _node_tags(tags: dict[str, str]) -> dict[str, str]:
    for key in tags:
        if key == "":
            raise ValueError("empty tag keys aren't supported")
        if key in RESTRICTED_TAG_KEYS or key.startswith(RESTRICTED_TAG_PREFIX):
            matched = key if key in RESTRICTED_TAG_KEYS else RESTRICTED_TAG_PREFIX + "/"
            raise ValueError(f"tag contains a restricted tag matching {matched}; Karpenter sets it, remove it")
    return tags


def _block_devices(mappings: list[BlockDeviceMapping]) -> list[BlockDeviceMapping]:
    if sum(1 for m in mappings if m.root_volume) > 1:
        raise ValueError("must have only one blockDeviceMappings with rootVolume")
    return mappings


def _network_interfaces(interfaces: list[NetworkInterface]) -> list[NetworkInterface]:
    if interfaces and not any(
        i.device_index == 0 and i.network_card_index == 0 and i.interface_type == "interface" for i in interfaces
    ):
        raise ValueError(
            "networkInterfaces must include a primary interface with interfaceType='interface' "
            "(networkCardIndex 0, deviceIndex 0)"
        )
    pairs = [(i.network_card_index, i.device_index) for i in interfaces]
    efa_cards = [i.network_card_index for i in interfaces if i.interface_type == "efa-only"]
    if len(set(pairs)) != len(pairs) or len(set(efa_cards)) != len(efa_cards):
        raise ValueError(
            "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, "
            "and can have at most one efa device per network card"
        )
    return interfaces


class EC2NodeClassSpec(KubeModel):
    """Exactly one of role/instanceProfile; amiFamily required unless an alias term is used, and consistent
    with the alias (the alias's family or Custom)."""

    kubelet: KubeletConfiguration | None = None
    subnet_selector_terms: list[SubnetSelectorTerm] = Field(min_length=1, max_length=MAX_SELECTOR_TERMS)
    security_group_selector_terms: list[SecurityGroupSelectorTerm] = Field(min_length=1, max_length=MAX_SELECTOR_TERMS)
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] | None = Field(
        default=None, max_length=MAX_SELECTOR_TERMS
    )
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    ami_selector_terms: list[AMISelectorTerm] = Field(default_factory=list, max_length=MAX_SELECTOR_TERMS)
    ami_family: AMIFamily | None = None
    user_data: str | None = None
    role: Annotated[str, _not_empty("role")] | None = None
    instance_profile: Annotated[str, _not_empty("instanceProfile")] | None = None
    tags: Annotated[dict[str, str], AfterValidator(_node_tags)] | None = None
    block_device_mappings: Annotated[list[BlockDeviceMapping], AfterValidator(_block_devices)] | None = Field(
        default=None, max_length=50
    )
    instance_store_policy: Literal["RAID0"] | None = None
    detailed_monitoring: bool | None = None
    metadata_options: MetadataOptions = Field(
        default_factory=MetadataOptions,
        json_schema_extra={
            "default": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "required",
            }
        },
    )
    context: str | None = None
    ip_prefix_count: int | None = Field(default=None, alias="ipPrefixCount", ge=0)
    network_interfaces: Annotated[list[NetworkInterface], AfterValidator(_network_interfaces)] | None = Field(
        default=None, max_length=150
    )
    placement_group_selector: PlacementGroupSelector | None = None
    connection_tracking: ConnectionTracking | None = None
    cpu_options: CPUOptions | None = None

    @model_validator(mode="after")
    def _cross_field_rules(self) -> EC2NodeClassSpec:
        if (self.role is None) == (self.instance_profile is None):
            raise field_error("role", "must specify exactly one of ['role', 'instanceProfile']")
        aliases = [t.alias for t in self.ami_selector_terms if t.alias is not None]
        if aliases and len(self.ami_selector_terms) != 1:
            raise field_error(
                "amiSelectorTerms",
                "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms; "
                "keep the alias term alone",
            )
        if not aliases and self.ami_family is None:
            raise field_error(
                "amiFamily",
                "must specify amiFamily if amiSelectorTerms does not contain an alias; set amiFamily "
                "(one of AL2, AL2023, Bottlerocket, Custom, Windows2019, Windows2022, Windows2025) or use an alias",
            )
        if aliases and self.ami_family is not None:
            implied = ALIAS_FAMILIES[aliases[0].split("@", 1)[0]]
            if self.ami_family not in (implied, "Custom"):
                raise field_error(
                    "amiFamily",
                    f"if set, amiFamily must be '{implied}' or 'Custom' when using {'an' if implied[0] == 'A' else 'a'}"
                    f" {implied} alias; got '{self.ami_family}'",
                )
        return self

    def alias_family(self) -> str | None:
        """The amiFamily implied by an alias term (AL2023 for "al2023@latest"), else None."""
        alias = next((t.alias for t in self.ami_selector_terms if t.alias is not None), None)
        return ALIAS_FAMILIES[alias.split("@", 1)[0]] if alias else None

    def effective_ami_family(self) -> str:
        """amiFamily when set, else the alias's family (validation guarantees one of them)."""
        return self.ami_family or self.alias_family() or "Custom"


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


class ResolvedCapacityReservation(KubeModel):
    """A capacity reservation the selector terms matched, as Karpenter's status.capacityReservations
    holds it. `reservationType` is `default` (an On-Demand Capacity Reservation) or `capacity-block`;
    `state` is `expiring` for a capacity block inside EC2's reclamation window, else `active`."""

    id: CapacityReservationId
    instance_type: str
    availability_zone: str
    owner_id: OwnerId = Field(alias="ownerID")
    instance_match_criteria: Literal["open", "targeted"]
    reservation_type: Literal["default", "capacity-block"] = "default"
    state: Literal["active", "expiring"] = "active"
    end_time: Annotated[str, SchemaExtra({"format": "date-time"})] | None = None
    interruptible: bool | None = None


class EC2NodeClassStatus(KubeModel):
    subnets: list[ResolvedSubnet] = Field(default_factory=list)
    security_groups: list[ResolvedSecurityGroup] = Field(default_factory=list)
    capacity_reservations: list[ResolvedCapacityReservation] = Field(default_factory=list)
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

    def status_resolves_spec(self) -> bool:
        """Whether the resolution in the status (AMIs, subnets, security groups) was made for the spec as it
        is now: its Ready condition observed this generation. A status written before the spec's last
        change (or without a generation) may name the AMIs of the old selector terms."""
        ready = get_condition(self.status.conditions, "Ready")
        generation = self.metadata.generation
        return ready is not None and generation is not None and ready.observed_generation == generation

    def hash_annotations(self) -> dict[str, str]:
        """The NodeClaim annotations that record which static fields it was launched with (NodeClassDrift)."""
        return {NODECLASS_HASH_ANNOTATION: self.static_hash(), NODECLASS_HASH_VERSION_ANNOTATION: STATIC_HASH_VERSION}

    def static_hash(self) -> str:
        """A stable hash (version STATIC_HASH_VERSION) of the spec's static fields: everything but the
        selector terms (DYNAMIC_SPEC_FIELDS), with amiFamily as the family in effect, so that writing out
        the family an alias implies is not a change. Nodes launched under another hash have drifted
        (NodeClassDrift)."""
        doc = {k: v for k, v in self.spec.to_kube().items() if k not in DYNAMIC_SPEC_FIELDS}
        doc["amiFamily"] = self.spec.effective_ami_family()
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
        return str(int(digest[:15], 16))


# ----- the CRD's CEL rules (apis.cel), where Karpenter's EC2NodeClass CRD attaches them, adapted to this
# model: amiSelectorTerms may be absent (see the module docstring), so rules reading it test has() first, and
# the evictionSoft/evictionSoftGracePeriod pairing rules do not fail on an absent map. Karpenter writes the
# "'id' is mutually exclusive" rules of subnet, security group and capacity reservation terms as
# `!self.all(x, ...)`, which only fires when every term breaks it; here they are `!self.exists(x, ...)`, so
# one bad term is refused, as the models refuse it.


def _exclusive(field_name: str, others: tuple[str, ...], message: str) -> CelRule:
    combination = " || ".join(f"has(x.{o})" for o in others)
    return CelRule(f"!self.exists(x, has(x.{field_name}) && ({combination}))", message)


def _at_least_one(fields: tuple[str, ...]) -> CelRule:
    listed = ", ".join(f"'{f}'" for f in fields)
    any_set = " || ".join(f"has(x.{f})" for f in fields)
    return CelRule(f"self.all(x, {any_set})", f"expected at least one, got none, [{listed}]")


def _alias_family_rule(alias_family: str, ami_family: str) -> CelRule:
    article = "an" if ami_family[0] in "AEIOU" else "a"
    return CelRule(
        "!has(self.amiFamily) || (has(self.amiSelectorTerms) && self.amiSelectorTerms.exists(x, has(x.alias) && "
        f"x.alias.find('^[^@]+') == '{alias_family}') ? (self.amiFamily == 'Custom' || "
        f"self.amiFamily == '{ami_family}') : true)",
        f"if set, amiFamily must be '{ami_family}' or 'Custom' when using {article} {ami_family} alias",
    )


def _keys_in(name: str, allowed: tuple[str, ...]) -> CelRule:
    listed = cel_list(allowed, quote="'")
    return CelRule(f"self.all(x, x in {listed})", f"valid keys for {name} are {listed.replace(', ', ',')}")


def _not_negative(name: str) -> CelRule:
    return CelRule("self.all(x, !self[x].startsWith('-'))", f"{name} value cannot be a negative resource quantity")


_SELECTOR_TAGS_RULES = (CelRule("self.all(k, k != '' && self[k] != '')", "empty tag keys or values aren't supported"),)
_WINDOWS_ALIASES = tuple(f for f in ALIAS_FAMILIES if f.startswith("windows"))
_NODE_TAG_RULES = (
    CelRule("self.all(k, k != '')", "empty tag keys aren't supported"),
    *(
        CelRule(
            f"self.all(k, !k.startsWith('{key}'))" if key == RESTRICTED_TAG_PREFIX else f"self.all(k, k != '{key}')",
            f"tag contains a restricted tag matching {key}{'/' if key == RESTRICTED_TAG_PREFIX else ''}",
        )
        for key in (RESTRICTED_TAG_KEYS[0], RESTRICTED_TAG_PREFIX, *RESTRICTED_TAG_KEYS[1:])
    ),
)

CEL_RULES: RuleTable = {
    "spec": (
        CelRule(
            "(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))",
            "must specify exactly one of ['role', 'instanceProfile']",
        ),
        *(_alias_family_rule(alias, family) for alias, family in ALIAS_FAMILIES.items()),
        CelRule(
            "(has(self.amiSelectorTerms) && self.amiSelectorTerms.exists(x, has(x.alias))) ? true : "
            "has(self.amiFamily)",
            "must specify amiFamily if amiSelectorTerms does not contain an alias",
        ),
    ),
    "spec.amiSelectorTerms": (
        _at_least_one(("tags", "id", "name", "alias", "ssmParameter")),
        _exclusive(
            "id",
            ("alias", "tags", "name", "owner"),
            "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
        ),
        _exclusive(
            "alias",
            ("id", "tags", "name", "owner"),
            "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
        ),
        CelRule(
            "!(self.exists(x, has(x.alias)) && self.size() != 1)",
            "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
        ),
    ),
    "spec.amiSelectorTerms[].alias": (
        CelRule(
            f"self.matches('{_ALIAS.pattern}')",
            "'alias' is improperly formatted, must match the format 'family@version'",
        ),
        CelRule(
            f"self.split('@')[0] in {cel_list(tuple(ALIAS_FAMILIES), quote=chr(39))}",
            "family is not supported, must be one of the following: " + ", ".join(f"'{f}'" for f in ALIAS_FAMILIES),
        ),
        CelRule(
            f"self.split('@')[0] in {cel_list(_WINDOWS_ALIASES, quote=chr(39))} ? "
            "self.split('@')[1] == 'latest' : true",
            "windows families may only specify version 'latest'",
        ),
    ),
    "spec.amiSelectorTerms[].tags": _SELECTOR_TAGS_RULES,
    "spec.blockDeviceMappings": (
        CelRule(
            "self.filter(x, has(x.rootVolume) ? x.rootVolume == true : false).size() <= 1",
            "must have only one blockDeviceMappings with rootVolume",
        ),
    ),
    "spec.blockDeviceMappings[].ebs": (
        CelRule("has(self.snapshotID) || has(self.volumeSize)", "snapshotID or volumeSize must be defined"),
        CelRule(
            "!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')",
            "snapshotID must be set when volumeInitializationRate is set",
        ),
    ),
    "spec.capacityReservationSelectorTerms": (
        _at_least_one(("tags", "id", "instanceMatchCriteria")),
        _exclusive(
            "id",
            ("tags", "ownerID", "instanceMatchCriteria"),
            "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term",
        ),
    ),
    "spec.capacityReservationSelectorTerms[].tags": _SELECTOR_TAGS_RULES,
    "spec.connectionTracking": (
        CelRule(
            "has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",
            "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",
        ),
    ),
    "spec.instanceProfile": (CelRule("self != ''", "instanceProfile cannot be empty"),),
    "spec.kubelet": (
        CelRule(
            "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ? "
            "self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent : true",
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
        ),
        CelRule(
            "has(self.evictionSoft) ? (has(self.evictionSoftGracePeriod) && "
            "self.evictionSoft.all(e, e in self.evictionSoftGracePeriod)) : true",
            "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
        ),
        CelRule(
            "has(self.evictionSoftGracePeriod) ? (has(self.evictionSoft) && "
            "self.evictionSoftGracePeriod.all(e, e in self.evictionSoft)) : true",
            "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
        ),
    ),
    **{
        f"spec.kubelet.{name}": (_keys_in(name, EVICTION_SIGNALS),)
        for name in ("evictionHard", "evictionSoft", "evictionSoftGracePeriod")
    },
    **{
        f"spec.kubelet.{name}": (_keys_in(name, RESERVED_RESOURCES), _not_negative(name))
        for name in ("kubeReserved", "systemReserved")
    },
    "spec.networkInterfaces": (
        CelRule(
            "self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && "
            "x.interfaceType == 'interface')",
            "networkInterfaces must include a primary interface with interfaceType='interface'",
        ),
        CelRule(
            "self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == y.deviceIndex)"
            ".size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex == "
            "y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))",
            "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at "
            "most one efa device per network card",
        ),
    ),
    "spec.placementGroupSelector": (
        CelRule("has(self.name) || has(self.id)", "expected at least one, got none, ['name', 'id']"),
        CelRule("!(has(self.name) && has(self.id))", "'name' and 'id' are mutually exclusive"),
    ),
    "spec.role": (CelRule("self != ''", "role cannot be empty"),),
    "spec.securityGroupSelectorTerms": (
        CelRule("self.size() != 0", "securityGroupSelectorTerms cannot be empty"),
        _at_least_one(("tags", "id", "name")),
        _exclusive(
            "id",
            ("tags", "name"),
            "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group "
            "selector term",
        ),
        _exclusive(
            "name",
            ("tags", "id"),
            "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group "
            "selector term",
        ),
    ),
    "spec.securityGroupSelectorTerms[].tags": _SELECTOR_TAGS_RULES,
    "spec.subnetSelectorTerms": (
        CelRule("self.size() != 0", "subnetSelectorTerms cannot be empty"),
        _at_least_one(("tags", "id")),
        _exclusive(
            "id",
            ("tags",),
            "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term",
        ),
    ),
    "spec.subnetSelectorTerms[].tags": _SELECTOR_TAGS_RULES,
    "spec.tags": _NODE_TAG_RULES,
}
