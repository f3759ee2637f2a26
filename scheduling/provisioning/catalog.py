"""Instance types as the solver sees them: labels (given, else derived from the name and capacity),
allocatable under a node class's kubelet settings, and the offerings that can actually be bought.

Kubelet settings (EC2NodeClass `spec.kubelet`): `maxPods` replaces the pod capacity, `podsPerCore` caps
it at that many per vCPU; when any of maxPods, podsPerCore, kubeReserved, systemReserved or evictionHard
is set, the cpu and memory overhead is recomputed as kube-reserved (EKS formulas unless given) +
system-reserved + the hard eviction threshold (default memory.available 100Mi). Otherwise the catalog's
overhead stands as given.

Ephemeral storage is the node class's (`apis.storage`): its kubelet volume, or under
`instanceStorePolicy: RAID0` the type's local NVMe total (the `instance-local-nvme` label, GB); the
kubelet keeps back kube-reserved, system-reserved and the nodefs eviction threshold of that size.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from apis import labels as L
from apis.ec2nodeclass import EC2NodeClass, KubeletConfiguration
from apis.instancetype import InstanceType, eks_kube_reserved_cpu_millis, eks_kube_reserved_memory_mib
from apis.storage import ephemeral_storage_bytes, ephemeral_storage_overhead, node_class_family
from apis.values.quantity import ResourceList, add, threshold_units, to_resource_list
from scheduling.constraints.requirements import Requirements

MIB = 2**20
DEFAULT_MAX_PODS = 110  # the kubelet's default when a catalog entry does not say
_NAME = re.compile(r"^(?P<family>(?P<category>[a-z]+)(?:-\d+tb)?(?P<generation>\d+)[a-z0-9-]*)\.(?P<size>[a-z0-9-]+)$")
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
WINDOWS_BUILDS = {"windows2019": "10.0.17763", "windows2022": "10.0.20348", "windows2025": "10.0.26100"}


@dataclass(frozen=True, slots=True)
class Offer:
    """`zone_id`: the zone's id (`topology.k8s.aws/zone-id`), '' when the node class does not know it."""

    zone: str
    capacity_type: str
    price: float
    zone_id: str = ""

    def value(self, key: str) -> str | None:
        """The offer's value of an offering key (`OFFERING_KEYS`)."""
        if key == L.ZONE:
            return self.zone
        if key == L.CAPACITY_TYPE:
            return self.capacity_type
        return self.zone_id or None


# Keys an offering, not the instance type's labels, decides.
OFFERING_KEYS: tuple[str, ...] = (L.ZONE, L.CAPACITY_TYPE, L.ZONE_ID)


@dataclass(eq=False, slots=True)
class Option:
    """One instance type under one node class: what it offers a pod and where it can be bought.
    `offers` holds available offerings only, cheapest first."""

    name: str
    labels: dict[str, str]
    capacity: ResourceList
    allocatable: ResourceList
    offers: tuple[Offer, ...]

    def compatible_offers(self, reqs: Requirements) -> list[Offer]:
        zone, ctype, zone_id = reqs.get_req(L.ZONE), reqs.get_req(L.CAPACITY_TYPE), reqs.get_req(L.ZONE_ID)
        return [
            o
            for o in self.offers
            if zone.allows(o.zone) and ctype.allows(o.capacity_type) and zone_id.allows(o.zone_id or None)
        ]

    def label_mismatch(self, reqs: Requirements) -> str | None:
        """The first label requirement (other than the offering keys) this type fails."""
        for key, req in reqs.items():
            if key in OFFERING_KEYS:
                continue
            if not req.allows(self.labels.get(key)):
                return key
        return None

    def compatible(self, reqs: Requirements) -> bool:
        return self.label_mismatch(reqs) is None and bool(self.compatible_offers(reqs))

    def price(self, reqs: Requirements) -> float | None:
        offers = self.compatible_offers(reqs)
        return offers[0].price if offers else None


def derived_labels(it: InstanceType, capacity: Mapping[str, int]) -> dict[str, str]:
    """The catalog's labels, completed: instance type name, os/arch (linux/amd64 unless given), the AWS
    family/category/generation/size parsed from a name like m5d.large, instance-cpu and -memory (MiB)."""
    out: dict[str, str] = {L.OS: "linux", L.ARCH: "amd64"}
    match = _NAME.match(it.name)
    if match:
        out[L.INSTANCE_FAMILY] = match["family"]
        out[L.INSTANCE_CATEGORY] = match["category"]
        out[L.INSTANCE_GENERATION] = match["generation"]
        out[L.INSTANCE_SIZE] = match["size"]
    if "cpu" in capacity:
        out[L.INSTANCE_CPU] = str(capacity["cpu"] // 1000)
    if "memory" in capacity:
        out[L.INSTANCE_MEMORY] = str(capacity["memory"] // MIB)
    for resource in GPU_RESOURCES:
        if capacity.get(resource):
            out[L.INSTANCE_GPU_COUNT] = str(capacity[resource])
    out.update(it.labels)
    out[L.INSTANCE_TYPE] = it.name
    return out


def _recomputes(kubelet: KubeletConfiguration | None) -> bool:
    if kubelet is None:
        return False
    fields = (kubelet.max_pods, kubelet.pods_per_core, kubelet.kube_reserved, kubelet.system_reserved)
    return any(f is not None for f in fields) or kubelet.eviction_hard is not None


def kubelet_capacity_and_overhead(
    it: InstanceType, kubelet: KubeletConfiguration | None
) -> tuple[ResourceList, ResourceList]:
    """(capacity, overhead) of the type under these kubelet settings, in canonical units."""
    capacity = to_resource_list(it.capacity)
    capacity.setdefault("pods", DEFAULT_MAX_PODS)
    overhead = to_resource_list(it.overhead)
    if not _recomputes(kubelet):
        return capacity, overhead
    assert kubelet is not None
    pods = capacity["pods"]
    if kubelet.max_pods is not None:
        pods = kubelet.max_pods
    if kubelet.pods_per_core:
        pods = min(pods, kubelet.pods_per_core * max(1, capacity.get("cpu", 0) // 1000))
    capacity["pods"] = pods
    reserved: ResourceList = {
        "cpu": eks_kube_reserved_cpu_millis(capacity.get("cpu", 0)),
        "memory": eks_kube_reserved_memory_mib(pods) * MIB,
    }
    if kubelet.kube_reserved:
        reserved = {**reserved, **to_resource_list(kubelet.kube_reserved)}
    reserved = add(reserved, to_resource_list(kubelet.system_reserved or {}))
    eviction = {"memory.available": "100Mi", **(kubelet.eviction_hard or {})}
    reserved["memory"] = reserved.get("memory", 0) + threshold_units(
        "memory", eviction["memory.available"], capacity.get("memory", 0)
    )
    if "nodefs.available" in eviction and "ephemeral-storage" in capacity:
        reserved["ephemeral-storage"] = reserved.get("ephemeral-storage", 0) + threshold_units(
            "ephemeral-storage", eviction["nodefs.available"], capacity["ephemeral-storage"]
        )
    merged = dict(overhead)
    merged.update(reserved)
    return capacity, merged


def local_nvme_gb(it: InstanceType) -> int | None:
    """The type's local NVMe instance store in GB (its `instance-local-nvme` label), None without one."""
    value = it.labels.get(L.INSTANCE_LOCAL_NVME)
    try:
        return int(value) if value else None
    except ValueError:
        return None


def node_class_storage(
    it: InstanceType,
    node_class: EC2NodeClass,
    capacity: ResourceList,
    overhead: ResourceList,
    known: dict[int | None, tuple[int, int]] | None = None,
) -> tuple[ResourceList, ResourceList]:
    """(capacity, overhead) with the ephemeral storage a node of this class gets on this type, and the
    part of it the kubelet keeps back. The inputs are not modified. `known`: (storage, reserved) by local
    NVMe size, for this node class only, used and extended: the class's volume is read once per size, not
    once per type."""
    nvme = local_nvme_gb(it)
    found = known.get(nvme) if known is not None else None
    if found is None:
        storage = ephemeral_storage_bytes(node_class, node_class_family(node_class), nvme)
        found = (storage, ephemeral_storage_overhead(storage, node_class.spec.kubelet))
        if known is not None:
            known[nvme] = found
    storage, reserved = found
    return {**capacity, "ephemeral-storage": storage}, {**overhead, "ephemeral-storage": reserved}


def node_class_os(node_class: EC2NodeClass) -> tuple[str, str | None]:
    """(kubernetes.io/os, node.kubernetes.io/windows-build) of the nodes this class launches: Windows when
    its AMI family or alias says so, else Linux."""
    spec = node_class.spec
    names = [spec.ami_family or ""] + [(term.alias or "").split("@")[0] for term in spec.ami_selector_terms]
    for name in names:
        build = WINDOWS_BUILDS.get(name.lower())
        if build:
            return "windows", build
    return "linux", None


# Options already built, by instance type name, with the instance type object they were built from: an
# entry is used only for that same object (the catalog builds new objects when prices or availability
# change), and a newer object of that name replaces it, so a memo holds at most one entry per type name.
OptionMemo = dict[str, tuple[InstanceType, "Option | None"]]


def build_options(
    instance_types: Iterable[InstanceType],
    kubelet: KubeletConfiguration | None = None,
    zones: frozenset[str] | None = None,
    os_labels: tuple[str, str | None] = ("linux", None),
    node_class: EC2NodeClass | None = None,
    zone_ids: Mapping[str, str] | None = None,
    memo: OptionMemo | None = None,
) -> list[Option]:
    """Every catalog type as an Option under these kubelet settings; offerings limited to available ones
    (and to `zones` when the node class resolved its subnets). Types with no offering left are dropped, and
    for Windows classes (`os_labels`) every non-amd64 type. Sorted by cheapest offering, then name. With
    `node_class`, ephemeral storage is that class's (`node_class_storage`), else the catalog's, and its
    reserved offerings are those of the capacity reservations in its status only. `zone_ids`
    (zone name -> zone id, from the node class's subnets) gives each offering its zone id.

    `memo`: what earlier calls with the same other arguments built (OptionMemo); used and extended (the
    caller keeps one per node class content: OptionCache)."""
    os_name, windows_build = os_labels
    reservations = {c.id for c in node_class.status.capacity_reservations} if node_class is not None else None
    archs = bootable_archs(node_class) if node_class is not None else frozenset()
    storage: dict[int | None, tuple[int, int]] = {}  # the node class's, by local NVMe size
    out: list[Option] = []
    for it in instance_types:
        known = memo.get(it.name) if memo is not None else None
        if known is not None and known[0] is it:
            option = known[1]
        else:
            option = _option(
                it, kubelet, zones, os_name, windows_build, node_class, zone_ids, reservations, archs, storage
            )
            if memo is not None:
                memo[it.name] = (it, option)
        if option is not None:
            out.append(option)
    out.sort(key=lambda o: (o.offers[0].price, o.name))
    return out


def _option(
    it: InstanceType,
    kubelet: KubeletConfiguration | None,
    zones: frozenset[str] | None,
    os_name: str,
    windows_build: str | None,
    node_class: EC2NodeClass | None,
    zone_ids: Mapping[str, str] | None,
    reservations: set[str] | None,
    archs: frozenset[str] = frozenset(),
    storage: dict[int | None, tuple[int, int]] | None = None,
) -> Option | None:
    """One type as build_options makes it; None when it is dropped."""
    capacity, overhead = kubelet_capacity_and_overhead(it, kubelet)
    if node_class is not None:
        capacity, overhead = node_class_storage(it, node_class, capacity, overhead, storage)
    allocatable = {name: value - overhead.get(name, 0) for name, value in capacity.items()}
    offers = sorted(
        (
            Offer(o.zone, o.capacity_type, o.price, (zone_ids or {}).get(o.zone, ""))
            for o in it.offerings
            if o.available
            and (zones is None or o.zone in zones)
            and (reservations is None or o.reservation_id is None or o.reservation_id in reservations)
        ),
        key=lambda o: (o.price, o.zone, o.capacity_type),
    )
    labels = derived_labels(it, capacity)
    if archs and labels.get(L.ARCH) not in archs:
        return None
    if os_name == "windows":
        if labels.get(L.ARCH) != "amd64":
            return None
        labels[L.OS] = os_name
        if windows_build:
            labels[L.WINDOWS_BUILD] = windows_build
    return Option(it.name, labels, capacity, allocatable, tuple(offers)) if offers else None


def bootable_archs(node_class: EC2NodeClass) -> frozenset[str]:
    """The architectures (`kubernetes.io/arch` values) of the AMIs in the node class's status; empty when
    it names none (not resolved yet: no filter). A type of another architecture could not boot, so a
    NodePool of this class is never planned onto it: a class that selects only x86_64 images by id or name
    gets no arm64 claims, each of whose launches would fail for want of an AMI and the next round plan the
    same. Karpenter does not filter so yet (it fails such a launch; its issue
    aws/karpenter-provider-aws#7893 asks for this)."""
    return frozenset(
        str(value)
        for ami in node_class.status.amis
        for requirement in ami.requirements
        if requirement.get("key") == L.ARCH and requirement.get("operator") == "In"
        for value in requirement.get("values") or []  # type: ignore[attr-defined]
    )


class OptionCache:
    """The Options of each node class, built once per instance type object and shared by every solve given
    this cache: a disruption pass's simulations (scheduling.disruption.simulate), and the solves and passes
    of one worker over its lifetime (the catalog's instance type objects stay the same until prices or
    availability change). A node class is known by its spec and status, not by its object, so a class read
    again unchanged reuses what was built, and a changed one gets options of its own. Holds the memos of
    at most `max_node_classes` contents, the least recently used dropped first; each memo holds at most one
    entry per instance type name (OptionMemo). Safe to share between threads: a memo's entries are set
    whole, and two threads that build the same entry build equal ones. Pure."""

    def __init__(self, max_node_classes: int = 64) -> None:
        self._max = max_node_classes
        self._lock = threading.Lock()
        self._memos: OrderedDict[str, OptionMemo] = OrderedDict()

    def memo(self, node_class: EC2NodeClass) -> OptionMemo:
        """The memo of options under `node_class`'s spec and status (build_options' `memo`)."""
        key = node_class.model_dump_json(include={"spec", "status"})
        with self._lock:
            known = self._memos.get(key)
            if known is None:
                known = self._memos[key] = {}
                while len(self._memos) > self._max:
                    self._memos.popitem(last=False)
            else:
                self._memos.move_to_end(key)
            return known
