"""Consolidation by simulation: remove candidates, schedule their pods with the provisioning solver. Pure.

Karpenter decides consolidation with the same scheduler that provisions: the candidates' reschedulable
pods are scheduled against the rest of the cluster (existing nodes, NodeClaims in flight) plus new
NodeClaims. If they all fit without a new node, the candidates can be deleted; if they need exactly one
new node, they can be replaced by it when it is cheaper (https://karpenter.sh/docs/concepts/disruption/#consolidation).

As in Karpenter's simulation, a candidate's pod may not move to a node that is not ready to take it now:
a NodeClaim in flight, or a Node not initialized or not Ready. Evicted, it would wait there for the node
(and take the room pods already waiting for that node were planned into), so the move fails.

Karpenter also schedules the pending pods in the same simulation; nodeflow does not. A pending pod is one
the kube-scheduler found no room for on the Nodes, and the capacity in flight it waits for is closed to
moved pods by the rule above, so it changes no decision but the rare one on room freed since the pod was
marked unschedulable; and it costs every simulation its solving: 400 pending pods with hostname
anti-affinity made a decision over 100 nodes about ten times slower (benchmarks/README.md).

Speed: the solver is given the remaining nodes with their bound pods' requests already subtracted from
allocatable, and only the bound pods that matter to placement kept as pods (those with required pod
anti-affinity, which repel newcomers). When a pod to place has affinity, topology spread or host ports,
every bound pod is passed instead, so counts per domain and ports stay exact.

Before a simulation, `hopeless` checks a necessary condition in O(resources): the pods to move must fit in
the free capacity of the other nodes plus one instance type of the largest catalog size, per resource
(cpu, memory, pods). Multi-node consolidation's binary search starts with large prefixes, which usually
fail this check, so it spends its simulations where an answer is possible.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from apis import labels as L
from apis.instancetype import InstanceType
from apis.requirements import NodeSelectorRequirement
from apis.values.quantity import ResourceList, add, format_resource_list, format_units, subtract, to_resource_list
from scheduling.constraints.resources import pod_requests
from scheduling.disruption.budgets import is_not_ready
from scheduling.disruption.candidates import NodeState, is_reschedulable
from scheduling.disruption.model import Obj
from scheduling.provisioning.catalog import OptionCache
from scheduling.provisioning.provisionable import is_bound
from scheduling.provisioning.solver import solve
from scheduling.provisioning.state import bound_anti_terms, is_starting
from scheduling.types import Plan, PlannedNodeClaim, SchedulingInput, UnschedulablePod


def _needs_exact(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    if spec.get("topologySpreadConstraints"):
        return True
    affinity = spec.get("affinity") or {}
    if affinity.get("podAffinity") or affinity.get("podAntiAffinity"):
        return True
    return any(port.get("hostPort") for c in spec.get("containers") or [] for port in c.get("ports") or [])


class Simulator:
    """Schedules the pods of removed nodes over one snapshot; counts its runs. Its solves share one
    OptionCache (`options`, else one of its own): each run takes the same node classes and instance types."""

    def __init__(self, cluster: SchedulingInput, options: OptionCache | None = None) -> None:
        self.cluster = cluster
        self.runs = 0
        self.options = options if options is not None else OptionCache()
        self.moving: dict[str, ResourceList] = {}  # requests of each node's reschedulable pods
        self.kept: dict[str, list[Obj]] = {}  # bound pods passed as pods in the fast path, by node
        used, all_used = self._tally(cluster.bound_pods)
        self.reduced: dict[str, Obj] = {}
        self.free: dict[str, ResourceList] = {}
        self.allocatable: dict[str, ResourceList] = {}
        for node in cluster.nodes:
            name = str((node.get("metadata") or {}).get("name", ""))
            status = node.get("status") or {}
            allocatable = to_resource_list(status.get("allocatable") or status.get("capacity") or {})
            self.allocatable[name] = allocatable
            free = {k: max(0, v) for k, v in subtract(allocatable, used.get(name, {})).items()}
            reduced = {**node, "status": {**status, "allocatable": format_resource_list(free)}}
            if not format_resource_list(free):
                reduced["status"]["allocatable"] = {"pods": "0"}
            self.reduced[name] = reduced
            self.free[name] = {k: max(0, v) for k, v in subtract(allocatable, all_used.get(name, {})).items()}
        self.free_total: ResourceList = {}
        for free_here in self.free.values():
            self.free_total = add(self.free_total, free_here)
        self.largest: ResourceList = {}
        for it in cluster.instance_types:
            for key, value in it.allocatable().items():
                self.largest[key] = max(self.largest.get(key, 0), value)
        # NodeClaims without a Node are capacity the check cannot see: then it never rules anything out.
        self.exact_check = all(c.status.node_name in self.free for c in cluster.node_claims)
        self.unready = {str((n.get("metadata") or {}).get("name", "")) for n in cluster.nodes if not _takes_pods(n)}

    def _tally(self, bound_pods: list[Obj]) -> tuple[dict[str, ResourceList], dict[str, ResourceList]]:
        """Fills `moving` and `kept`; returns the requests on each node of the pods not kept, and of all."""
        used: dict[str, ResourceList] = {}
        all_used: dict[str, ResourceList] = {}
        for pod in bound_pods:
            spec = pod.get("spec") or {}
            host = str(spec.get("nodeName") or "")
            if not is_bound(pod):
                continue
            try:
                requests = pod_requests(spec)
            except ValueError:
                continue
            all_used[host] = add(all_used.get(host, {}), requests)
            if is_reschedulable(pod):
                self.moving[host] = add(self.moving.get(host, {}), requests)
            if bound_anti_terms(pod):
                self.kept.setdefault(host, []).append(pod)
            else:
                used[host] = add(used.get(host, {}), requests)
        return used, all_used

    def hopeless(self, removed: Sequence[NodeState]) -> str:
        """Why the removed nodes' pods cannot fit on the other nodes plus one new node, by resource totals
        alone; "" when they might (a simulation decides)."""
        if not self.exact_check:
            return ""
        names = {s.name for s in removed}
        need: ResourceList = {}
        for name in names:
            need = add(need, self.moving.get(name, {}))
        for resource in ("cpu", "memory", "pods"):
            free = self.free_beside(names, resource)
            room = free + self.largest.get(resource, 0)
            if need.get(resource, 0) > room:
                return (
                    f"their pods request {format_units(resource, need[resource])} {resource}; the other nodes have "
                    f"{format_units(resource, free)} free and the largest instance type "
                    f"{format_units(resource, self.largest.get(resource, 0))}"
                )
        return ""

    def free_beside(self, names: set[str], resource: str) -> int:
        """The free `resource` (canonical units) of every node but `names`."""
        return self.free_total.get(resource, 0) - sum(self.free.get(n, {}).get(resource, 0) for n in names)

    def unused_share(self, name: str) -> float:
        """The share of the node's allocatable cpu or memory, whichever is busier, that no pod requests
        (0.0 when full, 1.0 when empty or unknown)."""
        allocatable, free = self.allocatable.get(name, {}), self.free.get(name, {})
        shares = [free.get(r, 0) / allocatable[r] for r in ("cpu", "memory") if allocatable.get(r)]
        return min(shares, default=1.0)

    def run(self, removed: Sequence[NodeState], instance_types: Sequence[InstanceType] | None = None) -> Plan:
        """Where the removed nodes' reschedulable pods would go if those nodes were gone; new nodes from
        `instance_types` when given (else the whole catalog)."""
        self.runs += 1
        names = {s.name for s in removed}
        pending = []
        for state in removed:
            for pod in state.reschedulable:
                moved = copy.copy(pod)
                moved["spec"] = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
                pending.append(moved)
        exact = any(_needs_exact(p) for p in pending)
        remaining = [n for n in self.cluster.nodes if str((n.get("metadata") or {}).get("name", "")) not in names]
        if exact:
            nodes = remaining
            bound = [
                p for p in self.cluster.bound_pods if str((p.get("spec") or {}).get("nodeName") or "") not in names
            ]
        else:
            nodes = [self.reduced[str((n.get("metadata") or {}).get("name", ""))] for n in remaining]
            bound = [p for node, pods in self.kept.items() if node not in names for p in pods]
        claims = [c for c in self.cluster.node_claims if not (c.status.node_name and c.status.node_name in names)]
        update = {"pods": pending, "bound_pods": bound, "nodes": nodes, "node_claims": claims}
        if instance_types is not None:
            update["instance_types"] = list(instance_types)
        return self._ready_only(solve(self.cluster.model_copy(update=update), self.options))

    def _ready_only(self, plan: Plan) -> Plan:
        """The plan with each pod placed on a node not ready to take it (see the module docstring) counted
        as one that would not schedule."""
        unschedulable = list(plan.unschedulable)
        for placement in plan.existing_nodes:
            if placement.node_claim or placement.name in self.unready:
                what = "a NodeClaim in flight" if placement.node_claim else "a node not initialized or not Ready"
                reason = f"it would move to {placement.name}, {what}: it would wait there, evicted"
                unschedulable.extend(UnschedulablePod(pod=p, reason=reason) for p in placement.pods)
        return plan.model_copy(update={"unschedulable": unschedulable})


def _takes_pods(node: Obj) -> bool:
    """Not being deleted, Ready, and initialized when Karpenter manages it (it carries a NodePool label)."""
    meta = node.get("metadata") or {}
    return not (is_starting(meta.get("labels") or {}) or meta.get("deletionTimestamp") or is_not_ready(node))


def allowed_values(claim: PlannedNodeClaim, key: str) -> set[str] | None:
    """The values an `In` requirement on `key` allows, None when unconstrained."""
    for req in claim.requirements:
        if req.key == key and req.operator == "In":
            return set(req.values)
    return None


def replacement_capacity_types(
    claim: PlannedNodeClaim, states: Sequence[NodeState], spot_to_spot: bool
) -> tuple[set[str], str]:
    """The capacity types a replacement of these nodes may launch as, by Karpenter's rules, or (empty, why
    not): spot nodes are replaced by spot only with the `SpotToSpotConsolidation` gate (`spot_to_spot`); a
    replacement that could be on-demand or spot is launched as spot (a shortage of spot must not fall back
    to a dearer on-demand node)."""
    capacity_types = allowed_values(claim, L.CAPACITY_TYPE) or {L.CAPACITY_TYPE_ON_DEMAND, L.CAPACITY_TYPE_SPOT}
    if L.CAPACITY_TYPE_SPOT not in capacity_types:
        return capacity_types, ""
    if all(s.capacity_type == L.CAPACITY_TYPE_SPOT for s in states):
        if not spot_to_spot:
            return set(), "replacing spot with spot needs the SpotToSpotConsolidation feature gate (off)"
        return {L.CAPACITY_TYPE_SPOT}, ""
    return {L.CAPACITY_TYPE_SPOT}, ""


def option_prices(
    claim: PlannedNodeClaim, catalog: dict[str, InstanceType], capacity_types: set[str]
) -> list[tuple[float, str]]:
    """(price, instance type) of the claim's options, each at its cheapest offering in the claim's zones
    and the given capacity types, cheapest first; options without such an offering are left out."""
    zones = allowed_values(claim, L.ZONE)
    out = []
    for name in claim.instance_types:
        it = catalog.get(name)
        if it is None:
            continue
        prices = [
            o.price
            for o in it.offerings
            if o.available and o.capacity_type in capacity_types and (zones is None or o.zone in zones)
        ]
        if prices:
            out.append((min(prices), name))
    return sorted(out)


def narrowed(claim: PlannedNodeClaim, options: list[tuple[float, str]], capacity_types: set[str]) -> PlannedNodeClaim:
    """The claim restricted to these options and capacity types, priced at the cheapest."""
    names = [name for _, name in options]
    requirements = [r for r in claim.requirements if r.key not in (L.INSTANCE_TYPE, L.CAPACITY_TYPE)]
    requirements.append(NodeSelectorRequirement(key=L.INSTANCE_TYPE, operator="In", values=names))
    requirements.append(NodeSelectorRequirement(key=L.CAPACITY_TYPE, operator="In", values=sorted(capacity_types)))
    labels = dict(claim.labels)
    if len(capacity_types) == 1:
        labels[L.CAPACITY_TYPE] = next(iter(capacity_types))
    return claim.model_copy(
        update={"instance_types": names, "requirements": requirements, "price": options[0][0], "labels": labels}
    )
