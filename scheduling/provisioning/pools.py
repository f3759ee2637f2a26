"""NodePools as the solver sees them: their template requirements (labels as `In`, the pool and node
class named), taints, instance-type options under their node class, daemonset overhead, and limits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apis import labels as L
from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from apis.meta import Condition
from apis.nodepool import NodePool
from apis.values.quantity import ResourceList, add, to_resource_list
from scheduling.constraints.requirements import (
    Req,
    Requirements,
    from_api,
    from_labels,
    parse_expressions,
    undefined_key_default,
)
from scheduling.constraints.resources import HostPort, host_ports, pod_requests
from scheduling.constraints.taints import TaintSpec, parse_taints, parse_tolerations, untolerated
from scheduling.provisioning.catalog import Option, OptionCache, bootable_archs, build_options, node_class_os
from scheduling.provisioning.limits import FloatArray, by_size, capacities, option_sizes
from scheduling.provisioning.packing import IntArray, OptionMatrix

Obj = Mapping[str, Any]


@dataclass(eq=False)
class Pool:
    """A NodePool ready to launch from (`problem` says why not, when it is not)."""

    name: str
    api: NodePool
    weight: int
    node_class: str
    reqs: Requirements
    taints: tuple[TaintSpec, ...]
    options: list[Option]
    ds_overhead: ResourceList = field(default_factory=dict)
    ds_ports: frozenset[HostPort] = frozenset()
    limits: ResourceList = field(default_factory=dict)
    used: ResourceList = field(default_factory=dict)  # existing capacity + reservations of new claims
    problem: str = ""
    type_keys: frozenset[str] = frozenset()  # keys instance types decide (others come from the pool)
    ami_archs: frozenset[str] = frozenset()  # the architectures its node class's AMIs boot (empty: any)
    matrix: OptionMatrix = field(default_factory=lambda: OptionMatrix([]))
    sizes: FloatArray = field(default_factory=lambda: option_sizes(OptionMatrix([]), {}))  # per matrix row

    def type_reqs(self, reqs: Requirements) -> Requirements:
        """The part of `reqs` an instance type must satisfy (well-known and catalog label keys, minus the
        labels the pool itself puts on its nodes)."""
        return Requirements({k: v for k, v in reqs.items() if k in self.type_keys})

    def remaining(self) -> ResourceList:
        return {name: limit - self.used.get(name, 0) for name, limit in self.limits.items()}

    def by_size(self, rows: IntArray) -> IntArray:
        """Option rows smallest first against this pool's limits."""
        return by_size(rows, self.sizes)

    def capacities(self, rows: IntArray) -> IntArray:
        """What each option row counts against each of the pool's limits (rows x limits, in `limits` order)."""
        return capacities(self.matrix, rows, list(self.limits))

    def reservation(self, rows: IntArray) -> ResourceList:
        """What a claim that may launch as any of these options counts against the limits: the largest
        capacity among them per limited resource, one node."""
        if len(rows) == 0:
            return dict.fromkeys(self.limits, 0)
        largest = self.capacities(rows).max(axis=0).tolist()
        return dict(zip(self.limits, largest, strict=True))

    def merge(self, base: Requirements, pod: Requirements) -> tuple[Requirements | None, str]:
        """`base` (this pool's or a claim's requirements) intersected with a pod's; keys the pool does not
        define take their default (open for well-known labels, absent for others). On conflict returns
        (None, reason)."""
        merged: dict[str, Req] = dict(base)
        for key, req in pod.items():
            mine = merged.get(key)
            combined = (undefined_key_default(key) if mine is None else mine) & req
            if combined.is_empty():
                return None, self.conflict_reason(key, mine, req)
            merged[key] = combined
        return Requirements(merged), ""

    def conflict_reason(self, key: str, mine: Req | None, pod: Req) -> str:
        if mine is None:
            restricted = L.restricted_label_reason(key)
            if restricted:
                return restricted
            return (
                f'label "{key}" is not defined by NodePool {self.name}: add it to spec.template.metadata.labels '
                "or as a requirement with operator Exists"
            )
        return f'requirement "{key}": the pod needs {pod.describe()}, NodePool {self.name} allows {mine.describe()}'


def is_ready(conditions: Iterable[Condition]) -> str:
    """'' when no Ready condition says otherwise, else the reason."""
    for cond in conditions:
        if cond.type == "Ready" and cond.status != "True":
            return f"not ready ({cond.reason or cond.status}: {cond.message or 'no message'})"
    return ""


def pool_problems(pools: Sequence[Pool]) -> list[str]:
    """Why the pools that cannot launch cannot, one entry each, for an unschedulable pod's reason. When none
    can (the cluster has NodePools but no ready one), a single entry says so, naming each pool with the
    message of its Ready condition (e.g. which EC2NodeClass is not ready and why), or its problem; no
    pool at all is "no NodePool exists"."""
    if not pools:
        return ["no NodePool exists"]
    if any(not p.problem for p in pools):
        return [f"NodePool {p.name}: {p.problem}" for p in pools if p.problem]
    why = "; ".join(f"{p.name}: {_ready_message(p) or p.problem}" for p in pools)
    return [f"no ready NodePool ({why})"]


def _ready_message(pool: Pool) -> str:
    ready = next((c for c in pool.api.status.conditions if c.type == "Ready"), None)
    return ready.message if ready is not None and ready.status != "True" else ""


def pool_requirements(pool: NodePool) -> Requirements:
    template = pool.spec.template
    reqs = from_api(template.spec.requirements, f"NodePool {pool.name} spec.template.spec.requirements")
    reqs = reqs.intersect(from_labels(template.metadata.labels))
    reqs = reqs.with_req(L.NODEPOOL, Req.from_operator("In", [pool.name]))
    return reqs.with_req(L.NODECLASS, Req.from_operator("In", [template.spec.node_class_ref.name]))


def daemonset_overhead(pool: Pool, daemonsets: Iterable[Obj]) -> tuple[ResourceList, frozenset[HostPort]]:
    """Requests and host ports of the daemonsets that would run on this pool's nodes (their tolerations
    against the pool's taints, their nodeSelector and first required node-affinity term against the
    pool's requirements)."""
    total: ResourceList = {}
    ports: set[HostPort] = set()
    for ds in daemonsets:
        spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        try:
            tolerations = parse_tolerations(spec.get("tolerations") or [])
            if untolerated(pool.taints, tolerations, prefer_no_schedule=False):
                continue
            reqs = from_labels(spec.get("nodeSelector") or {})
            terms = (
                ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution"
                )
                or {}
            ).get("nodeSelectorTerms") or []
            if terms:
                reqs = reqs.intersect(parse_expressions(terms[0].get("matchExpressions") or [], "daemonset"))
            merged, _ = pool.merge(pool.reqs, reqs)
            if merged is None:
                continue
            total = add(total, pod_requests(spec))
            ports |= host_ports(spec)
        except (ValueError, TypeError, KeyError):
            continue
    return total, frozenset(ports)


def build_pools(
    node_pools: Iterable[NodePool],
    node_classes: Iterable[EC2NodeClass],
    instance_types: list[InstanceType],
    daemonsets: Sequence[Obj],
    existing_capacity: Mapping[str, ResourceList],
    cache: OptionCache | None = None,
) -> list[Pool]:
    """Pools by weight (highest first), then name. `existing_capacity` maps pool name to the summed
    capacity (and `nodes` count) of its nodes and claims that already exist. `cache`: options built by
    earlier solves over the same node class and instance type objects (OptionCache)."""
    classes = {nc.name: nc for nc in node_classes}
    option_cache: dict[str, list[Option]] = {}
    matrix_cache: dict[str, OptionMatrix] = {}
    out: list[Pool] = []
    for np in node_pools:
        ref = np.spec.template.spec.node_class_ref
        nc = classes.get(ref.name)
        problem = is_ready(np.status.conditions)
        if np.spec.replicas is not None:
            problem = "static NodePool (spec.replicas): it keeps a fixed node count and does not launch for pods"
        if nc is None:
            problem = problem or f"{ref.kind} {ref.name} not found"
            options: list[Option] = []
        else:
            problem = problem or is_ready(nc.status.conditions)
            if nc.name not in option_cache:
                zones = frozenset(s.zone for s in nc.status.subnets) or None
                zone_ids = {s.zone: s.zone_id for s in nc.status.subnets if s.zone_id}
                memo = cache.memo(nc) if cache is not None else None
                option_cache[nc.name] = build_options(
                    instance_types, nc.spec.kubelet, zones, node_class_os(nc), node_class=nc, zone_ids=zone_ids,
                    memo=memo,
                )  # fmt: skip
            options = option_cache[nc.name]
        try:
            reqs = pool_requirements(np)
        except ValueError as err:
            reqs, problem = Requirements(), str(err)
        taints = parse_taints(t.to_kube() for t in np.spec.template.spec.taints)
        limits = to_resource_list(np.spec.limits)
        pool = Pool(np.name, np, np.spec.weight or 0, ref.name, reqs, taints, options, limits=limits)
        if ref.name not in matrix_cache:
            matrix_cache[ref.name] = OptionMatrix(options)
        pool.matrix = matrix_cache[ref.name]
        pool.sizes = option_sizes(pool.matrix, limits)
        pool.used = dict(existing_capacity.get(np.name, {}))
        pool.ds_overhead, pool.ds_ports = daemonset_overhead(pool, daemonsets)
        pool.problem = problem
        pool.ami_archs = bootable_archs(nc) if nc is not None else frozenset()
        catalog_keys = {key for option in options for key in option.labels}
        pool_keys = {L.NODEPOOL, L.NODECLASS, *np.spec.template.metadata.labels}
        pool.type_keys = frozenset((set(L.WELL_KNOWN_LABELS) | catalog_keys) - pool_keys)
        out.append(pool)
    out.sort(key=lambda p: (-p.weight, p.name))
    return out
