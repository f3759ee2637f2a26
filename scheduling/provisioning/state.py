"""The cluster as it is: existing nodes with their bound pods, NodeClaims in flight, RuntimeClass
overheads, and the zonal requirements of volumes (bound PVs, StorageClass allowedTopologies)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apis import labels as L
from apis.values.quantity import ResourceList, add, to_resource_list
from scheduling.constraints.requirements import Req, Requirements, from_labels, parse_expressions
from scheduling.constraints.resources import host_ports, pod_requests
from scheduling.constraints.taints import TaintSpec, is_ephemeral_taint, parse_taints
from scheduling.constraints.topology import ANTI, NamespaceLabels, Term
from scheduling.provisioning.pods import Obj, pod_affinity_terms
from scheduling.provisioning.pools import Pool
from scheduling.provisioning.targets import NodeTarget
from scheduling.types import SchedulingInput

UNSCHEDULABLE_TAINT = TaintSpec("node.kubernetes.io/unschedulable", "", "NoSchedule")
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
TERMINAL_PHASES = ("Succeeded", "Failed")


def _node_target(node: Obj, startup_taints: Mapping[str, tuple[TaintSpec, ...]]) -> NodeTarget:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    name = str(meta.get("name", ""))
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    labels.setdefault(L.HOSTNAME, name)
    taints = parse_taints(spec.get("taints") or [])
    if is_starting(labels):
        starting = startup_taints.get(name, ())
        taints = tuple(t for t in taints if not is_ephemeral_taint(t.key) and not _matches_any(t, starting))
    if spec.get("unschedulable") or meta.get("deletionTimestamp"):
        taints = (*taints, UNSCHEDULABLE_TAINT)
    allocatable = to_resource_list(status.get("allocatable") or status.get("capacity") or {})
    return NodeTarget(name, labels, taints, allocatable)


def is_starting(labels: Mapping[str, str]) -> bool:
    """A node of a NodePool not initialized yet: its taints that only last while a node starts are assumed
    to go, as Karpenter's cluster state assumes. An initialized node, or one no NodePool made, is taken
    with every taint it has: `node.kubernetes.io/unreachable` on a node that stopped answering keeps
    pods off it, so they get a new node."""
    return L.NODEPOOL in labels and labels.get(L.INITIALIZED) != "true"


def _matches_any(taint: TaintSpec, among: tuple[TaintSpec, ...]) -> bool:
    """`taint` has the key and effect of one of `among` (Kubernetes' MatchTaint: the value is not compared)."""
    return any(taint.key == other.key and taint.effect == other.effect for other in among)


def startup_taints_by_node(inp: SchedulingInput) -> dict[str, tuple[TaintSpec, ...]]:
    """Each registered NodeClaim's `spec.startupTaints`, by its Node's name."""
    return {
        claim.status.node_name: parse_taints(t.to_kube() for t in claim.spec.startup_taints)
        for claim in inp.node_claims
        if claim.status.node_name and claim.spec.startup_taints
    }


def cluster_targets(
    inp: SchedulingInput,
) -> tuple[list[NodeTarget], dict[str, ResourceList], list[tuple[NodeTarget, Obj]]]:
    """(existing nodes sorted by name, capacity of those nodes per NodePool, bound pods with their node)."""
    startup = startup_taints_by_node(inp)
    targets = sorted((_node_target(n, startup) for n in inp.nodes), key=lambda t: t.name)
    by_name = {t.name: t for t in targets}
    capacity: dict[str, ResourceList] = {}
    for node in inp.nodes:
        meta = node.get("metadata") or {}
        pool = (meta.get("labels") or {}).get(L.NODEPOOL)
        if pool:
            node_cap = to_resource_list((node.get("status") or {}).get("capacity") or {})
            capacity[pool] = add(capacity.get(pool, {}), {**node_cap, "nodes": 1})
    bound: list[tuple[NodeTarget, Obj]] = []
    for pod in inp.bound_pods:
        spec = pod.get("spec") or {}
        target = by_name.get(str(spec.get("nodeName") or ""))
        if target is None or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        try:
            target.used = add(target.used, pod_requests(spec))
        except ValueError:
            continue
        target.ports |= host_ports(spec)
        bound.append((target, pod))
    return targets, capacity, bound


def in_flight_targets(inp: SchedulingInput, pools: list[Pool], node_names: set[str]) -> list[NodeTarget]:
    """NodeClaims without a Node yet, as targets: labels from their single-valued requirements, their
    allocatable from status (else the smallest option of their pool their requirements allow), with
    their pool's daemonset overhead already used. Each also counts against its pool's limits: its status
    capacity, else the largest option it could still become (as new claims reserve)."""
    by_pool = {p.name: p for p in pools}
    out: list[NodeTarget] = []
    # Claims planned in one round share their requirements, and each simulation of a disruption decision
    # builds these targets again, for every claim in flight: what its pool's options allow is worked out
    # once per pool and requirements.
    fits: dict[tuple[str, Requirements], _Fit] = {}
    for claim in sorted(inp.node_claims, key=lambda c: c.name):
        if claim.metadata.deletion_timestamp or (claim.status.node_name and claim.status.node_name in node_names):
            continue
        try:
            reqs = parse_expressions((r.model_dump(by_alias=True) for r in claim.spec.requirements), "requirements")
        except ValueError:
            continue
        labels = _with_single_values(claim.metadata.labels, reqs)
        pool = by_pool.get(labels.get(L.NODEPOOL, ""))
        allocatable = to_resource_list(claim.status.allocatable)
        capacity = to_resource_list(claim.status.capacity)
        if pool is not None:
            if not (allocatable and capacity):  # the options are needed only for what status does not say
                fit = fits.get((pool.name, reqs))
                if fit is None:
                    fit = fits[(pool.name, reqs)] = _fit(pool, reqs)
                allocatable = allocatable or dict(fit.smallest_allocatable)
                capacity = capacity or fit.largest_capacity
            pool.used = add(pool.used, {**capacity, "nodes": 1})
        if not allocatable:
            continue
        taints = parse_taints(t.to_kube() for t in claim.spec.taints)
        target = NodeTarget(claim.name, labels, taints, allocatable, in_flight=True)
        target.labels.setdefault(L.HOSTNAME, claim.status.node_name or claim.name)
        if pool is not None:
            target.used = dict(pool.ds_overhead)
            target.ports = set(pool.ds_ports)
        out.append(target)
    return out


def _with_single_values(labels: Mapping[str, str], reqs: Requirements) -> dict[str, str]:
    """The labels, and the value of each requirement that allows just one where the labels have none."""
    out = dict(labels)
    for key, req in reqs.items():
        value = req.single()
        if value is not None:
            out.setdefault(key, value)
    return out


@dataclass(frozen=True)
class _Fit:
    """What a claim in flight could still become, from the options of its pool its requirements allow:
    the smallest one's allocatable (by cpu, then memory), and the largest capacity of each resource (what
    the claim reserves against the pool's limits, as new claims do). Both empty when no option fits."""

    smallest_allocatable: ResourceList
    largest_capacity: ResourceList


def _fit(pool: Pool, reqs: Requirements) -> _Fit:
    type_reqs = pool.type_reqs(reqs)
    fitting = [o for o in pool.options if o.compatible(type_reqs)]
    if not fitting:
        return _Fit({}, {})
    smallest = min(fitting, key=lambda o: (o.allocatable.get("cpu", 0), o.allocatable.get("memory", 0)))
    largest: ResourceList = {}
    for option in fitting:
        for name, value in option.capacity.items():
            largest[name] = max(largest.get(name, 0), value)
    return _Fit(dict(smallest.allocatable), largest)


def runtime_overheads(runtime_classes: Iterable[Obj]) -> dict[str, ResourceList]:
    out: dict[str, ResourceList] = {}
    for rc in runtime_classes:
        name = str((rc.get("metadata") or {}).get("name", ""))
        fixed = (rc.get("overhead") or {}).get("podFixed") or {}
        out[name] = to_resource_list(fixed)
    return out


def bound_anti_terms(pod: Obj, namespace_labels: NamespaceLabels | None = None) -> list[Term]:
    """The required anti-affinity terms of a running pod (pending pods matching them keep away)."""
    meta = pod.get("metadata") or {}
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    try:
        required, _ = pod_affinity_terms(
            affinity, ANTI, meta.get("namespace") or "default", "spec.affinity.podAntiAffinity", namespace_labels
        )
    except ValueError:
        return []
    return required


class VolumeObjects:
    """The cluster's PersistentVolumeClaims (by namespace and name), PersistentVolumes and StorageClasses (by
    name), and the default StorageClass (`default_storage_class`)."""

    def __init__(self, claims: Iterable[Obj], volumes: Iterable[Obj], storage_classes: Iterable[Obj]) -> None:
        self.pvcs = {
            ((p.get("metadata") or {}).get("namespace") or "default", (p.get("metadata") or {}).get("name")): p
            for p in claims
        }
        self.pvs = {(p.get("metadata") or {}).get("name"): p for p in volumes}
        classes = list(storage_classes)
        self.classes = {(s.get("metadata") or {}).get("name"): s for s in classes}
        self.default_class = default_storage_class(classes)


class _Volumes(VolumeObjects):
    def __init__(self, inp: SchedulingInput) -> None:
        super().__init__(inp.persistent_volume_claims, inp.persistent_volumes, inp.storage_classes)

    def class_reqs(self, name: str | None, where: str) -> Requirements:
        name = name or self.default_class
        sc = self.classes.get(name) if name else None
        if sc is None:
            return Requirements()
        reqs = Requirements()
        for term in (sc.get("allowedTopologies") or [])[:1]:
            for expr in term.get("matchLabelExpressions") or []:
                reqs = reqs.intersect(
                    Requirements({str(expr["key"]): Req.from_operator("In", expr.get("values") or [])})
                )
        return _zonal(reqs)

    def pv_reqs(self, pv: Obj, where: str) -> Requirements:
        terms = (
            (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
        ) or []
        if not terms:
            return Requirements()
        return _zonal(parse_expressions(terms[0].get("matchExpressions") or [], f"{where} nodeAffinity"))

    def __call__(self, namespace: str, spec: Mapping[str, Any]) -> Requirements:
        reqs = Requirements()
        for index, volume in enumerate(spec.get("volumes") or []):
            where = f"spec.volumes[{index}]"
            if volume.get("ephemeral"):
                template = ((volume["ephemeral"].get("volumeClaimTemplate") or {}).get("spec")) or {}
                reqs = reqs.intersect(self.class_reqs(template.get("storageClassName"), where))
                continue
            source = volume.get("persistentVolumeClaim")
            if not source:
                continue
            claim_name = source.get("claimName")
            pvc = self.pvcs.get((namespace, claim_name))
            if pvc is None:
                raise ValueError(f'{where}: PersistentVolumeClaim "{namespace}/{claim_name}" not found')
            pvc_spec = pvc.get("spec") or {}
            volume_name = pvc_spec.get("volumeName")
            if volume_name:
                pv = self.pvs.get(volume_name)
                if pv is None:
                    raise ValueError(f'{where}: PersistentVolume "{volume_name}" (bound to {claim_name}) not found')
                reqs = reqs.intersect(self.pv_reqs(pv, where))
            else:
                reqs = reqs.intersect(self.class_reqs(pvc_spec.get("storageClassName"), where))
        return reqs


def default_storage_class(storage_classes: Iterable[Obj]) -> str | None:
    """The StorageClass an unbound claim without `storageClassName` gets: the one annotated default (the
    first by name, should several be)."""
    defaults = sorted(
        str((s.get("metadata") or {}).get("name"))
        for s in storage_classes
        if ((s.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
    )
    return defaults[0] if defaults else None


def _zonal(reqs: Requirements) -> Requirements:
    """Volume topology that matters for new nodes: hostname affinity (local volumes) is ignored."""
    return Requirements({k: v for k, v in reqs.items() if k != L.HOSTNAME})


def volume_resolver(inp: SchedulingInput) -> _Volumes:
    return _Volumes(inp)


def labels_requirements(labels: Mapping[str, str]) -> Requirements:
    return from_labels(labels)
