"""Which nodes the disruption methods may consider, and why the others may not. Pure.

Karpenter v1's candidate rules (https://karpenter.sh/docs/concepts/disruption/), each rejection naming
what blocks:

- the node has a NodeClaim, carries `karpenter.sh/nodepool` of a NodePool that exists, is initialized,
  and is not already being disrupted (deleting, or tainted `karpenter.sh/disrupted`);
- neither the Node nor its NodeClaim is annotated `karpenter.sh/do-not-disrupt: "true"`;
- no pod that would be evicted is annotated `karpenter.sh/do-not-disrupt`: `"true"` blocks, a duration
  such as `"30m"` blocks until the pod's start time plus that duration, any other value is ignored;
- no pod that would be evicted is covered by a PodDisruptionBudget that allows no disruption now
  (`status.disruptionsAllowed` 0), nor by more than one PDB (the eviction API refuses those);
- static NodePools (`spec.replicas` set) are left to their own controller.

Pods that would be evicted ("reschedulable") exclude DaemonSet pods, mirror (static) pods, terminal pods
and pods already terminating (unless owned by a StatefulSet, whose replacement waits for them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from apis import labels as L
from apis.instancetype import InstanceType
from apis.meta import parse_rfc3339
from apis.nodeclaim import INITIALIZED, NodeClaim
from apis.nodepool import NodePool
from apis.values.duration import parse_duration
from scheduling.constraints.topology import Selector, parse_selector
from scheduling.disruption.budgets import is_disrupting, is_initialized
from scheduling.disruption.model import CandidateRef, Command, Method, Obj, Reason, Rejection
from scheduling.provisioning.provisionable import TERMINAL_PHASES, is_bound, pod_key

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it, in UTC; None when absent or unreadable."""
    return parse_rfc3339(text)


def _owner_kinds(pod: Obj) -> set[str]:
    return {str(ref.get("kind")) for ref in (pod.get("metadata") or {}).get("ownerReferences") or []}


def is_reschedulable(pod: Obj) -> bool:
    """Would be evicted and need a place elsewhere: not a DaemonSet or mirror pod, not terminal, and not
    terminating (unless a StatefulSet owns it)."""
    meta = pod.get("metadata") or {}
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return False
    kinds = _owner_kinds(pod)
    if "DaemonSet" in kinds or "Node" in kinds or MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return False
    return not (meta.get("deletionTimestamp") and "StatefulSet" not in kinds)


def do_not_disrupt_until(pod: Obj) -> tuple[bool, datetime | None]:
    """(blocked forever, blocked until): "true" blocks with no end; a Go duration ("30m", "1h30m") blocks
    until the pod's start (else creation) time plus it; other values, and a missing annotation, do not
    block."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(L.DO_NOT_DISRUPT_ANNOTATION)
    if value is None:
        return False, None
    if value == "true":
        return True, None
    try:
        length = parse_duration(value) if value != "Never" else None
    except ValueError:
        length = None
    if length is None:  # not "true" and not a Go duration: ignored, as Karpenter does
        return False, None
    started = parse_time((pod.get("status") or {}).get("startTime")) or parse_time(
        (pod.get("metadata") or {}).get("creationTimestamp")
    )
    if started is None:
        return True, None
    return False, started + length


def eviction_cost(pod: Obj) -> float:
    """Karpenter's eviction cost of one pod: 1 + pod-deletion-cost/2^27 + priority/2^25, clamped to
    [-10, 10] (an unreadable deletion cost counts as 0)."""
    cost = 1.0
    annotation = ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    try:
        cost += float(annotation or 0) / 2**27
    except ValueError:
        pass
    cost += float((pod.get("spec") or {}).get("priority") or 0) / 2**25
    return min(10.0, max(-10.0, cost))


def disruption_cost(pods: Sequence[Obj], claim: NodeClaim | None, created: datetime | None, now: datetime) -> float:
    """The pods' eviction costs summed, then scaled by the fraction of the node's expireAfter lifetime
    still ahead (cheaper to disrupt a node that expires soon): Karpenter's candidate order."""
    total = sum(eviction_cost(pod) for pod in pods)
    if claim is not None and created is not None:
        lifetime = parse_duration(claim.spec.expire_after)
        if lifetime:
            remaining = (created + lifetime - now) / lifetime
            total *= min(1.0, max(0.0, remaining))
    return total


@dataclass(eq=False)
class NodeState:
    """A node as the disruption methods see it."""

    name: str
    node: Obj
    claim: NodeClaim | None
    pool: NodePool | None
    pods: list[Obj] = field(default_factory=list)  # non-terminal pods bound to it
    reschedulable: list[Obj] = field(default_factory=list)
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    price: float | None = None
    cost: float = 0.0

    @property
    def pool_name(self) -> str | None:
        return self.pool.name if self.pool is not None else self.labels.get(L.NODEPOOL)

    @property
    def labels(self) -> dict[str, str]:
        return (self.node.get("metadata") or {}).get("labels") or {}

    @property
    def empty(self) -> bool:
        return not self.reschedulable

    @property
    def drifted(self) -> bool:
        return self.claim is not None and self.claim.condition_true("Drifted")

    def ref_price(self) -> str:
        return "unknown" if self.price is None else f"${self.price:.4f}/h"


def offering_price(types: Mapping[str, InstanceType], name: str, zone: str, capacity_type: str) -> float | None:
    """The price of the node's own offering (instance type, zone, capacity type), None when unknown."""
    it = types.get(name)
    if it is None:
        return None
    prices = [o.price for o in it.offerings if o.zone == zone and o.capacity_type == capacity_type]
    return min(prices) if prices else None


def node_claims_by_node(nodes: Sequence[Obj], claims: Sequence[NodeClaim]) -> dict[str, NodeClaim]:
    """Each Node's NodeClaim by Node name, matched by the claim's status.nodeName, else its providerID."""
    by_node = {c.status.node_name: c for c in claims if c.status.node_name}
    by_provider = {c.status.provider_id: c for c in claims if c.status.provider_id}
    out = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name", ""))
        claim = by_node.get(name) or by_provider.get((node.get("spec") or {}).get("providerID") or "")
        if claim is not None:
            out[name] = claim
    return out


def build_states(
    nodes: Sequence[Obj],
    claims: Sequence[NodeClaim],
    pools: Sequence[NodePool],
    bound_pods: Sequence[Obj],
    instance_types: Sequence[InstanceType],
    now: datetime,
) -> list[NodeState]:
    """Every Node with its NodeClaim (matched by status.nodeName, else providerID), pool, pods and price."""
    claim_of = node_claims_by_node(nodes, claims)
    pools_by_name = {p.name: p for p in pools}
    types = {it.name: it for it in instance_types}
    pods_by_node: dict[str, list[Obj]] = {}
    for pod in bound_pods:
        if is_bound(pod):
            pods_by_node.setdefault(str(pod["spec"]["nodeName"]), []).append(pod)
    out = []
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name", ""))):
        meta = node.get("metadata") or {}
        name = str(meta.get("name", ""))
        labels = meta.get("labels") or {}
        claim = claim_of.get(name)
        state = NodeState(name, node, claim, pools_by_name.get(labels.get(L.NODEPOOL, "")))
        state.pods = pods_by_node.get(name, [])
        state.reschedulable = [p for p in state.pods if is_reschedulable(p)]
        state.instance_type = labels.get(L.INSTANCE_TYPE, "")
        state.zone = labels.get(L.ZONE, "")
        state.capacity_type = labels.get(L.CAPACITY_TYPE, L.CAPACITY_TYPE_ON_DEMAND)
        state.price = offering_price(types, state.instance_type, state.zone, state.capacity_type)
        created = parse_time(claim.metadata.creation_timestamp if claim else None) or parse_time(
            meta.get("creationTimestamp")
        )
        state.cost = disruption_cost(state.reschedulable, claim, created, now)
        out.append(state)
    return out


class PdbIndex:
    """PodDisruptionBudgets by namespace, to find the ones covering a pod."""

    def __init__(self, pdbs: Sequence[Obj]) -> None:
        self.by_namespace: dict[str, list[tuple[str, Selector, int]]] = {}
        for pdb in pdbs:
            meta = pdb.get("metadata") or {}
            namespace = meta.get("namespace") or "default"
            try:
                selector = parse_selector((pdb.get("spec") or {}).get("selector"), namespace, "spec.selector")
            except ValueError:
                continue
            allowed = int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)
            self.by_namespace.setdefault(namespace, []).append((str(meta.get("name", "")), selector, allowed))

    def covering(self, pod: Obj) -> list[tuple[str, int]]:
        """(name, disruptionsAllowed) of every PDB whose selector matches the pod."""
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        labels = meta.get("labels") or {}
        return [(n, a) for n, sel, a in self.by_namespace.get(namespace, []) if sel.matches(namespace, labels)]


def node_rejection(state: NodeState) -> Rejection | None:
    """Why the node can be no method's candidate, whatever its pods: not managed, not initialized,
    already disrupting, do-not-disrupt on the Node or NodeClaim, static pool. None when it can."""
    pool_name = state.pool_name

    def reject(code: str, message: str) -> Rejection:
        return Rejection(node=state.name, node_pool=pool_name, code=code, message=message)

    if state.claim is None or L.NODEPOOL not in state.labels:
        return reject("NotManaged", "not a Karpenter node: no NodeClaim or no karpenter.sh/nodepool label")
    if state.pool is None:
        return reject("NodePoolNotFound", f'its NodePool "{pool_name}" does not exist')
    if not (is_initialized(state.node) or state.claim.condition_true(INITIALIZED)):
        return reject("NotInitialized", "not initialized yet")
    if is_disrupting(state.node) or state.claim.metadata.deletion_timestamp:
        return reject("Disrupting", "already being disrupted (deleting, tainted karpenter.sh/disrupted, or NotReady)")
    for what, notes in (
        ("Node", (state.node.get("metadata") or {}).get("annotations") or {}),
        ("NodeClaim", state.claim.metadata.annotations),
    ):
        if notes.get(L.DO_NOT_DISRUPT_ANNOTATION) == "true":
            return reject("DoNotDisrupt", f'the {what} is annotated {L.DO_NOT_DISRUPT_ANNOTATION}: "true"')
    if state.pool.spec.replicas is not None:
        return reject("StaticNodePool", f"NodePool {pool_name} is static (spec.replicas set): never consolidated")
    return None


def pod_rejection(state: NodeState, pdbs: PdbIndex, now: datetime) -> Rejection | None:
    """The first pod that blocks a graceful disruption of the node (do-not-disrupt, PDB), or None."""
    for pod in state.reschedulable:
        forever, until = do_not_disrupt_until(pod)
        if forever or (until is not None and until > now):
            value = ((pod.get("metadata") or {}).get("annotations") or {}).get(L.DO_NOT_DISRUPT_ANNOTATION)
            lapse = "" if until is None else f" until {until.strftime('%Y-%m-%d %H:%M:%S')} UTC"
            return Rejection(
                node=state.name,
                node_pool=state.pool_name,
                code="PodDoNotDisrupt",
                message=f'pod {pod_key(pod)} has {L.DO_NOT_DISRUPT_ANNOTATION}: "{value}"{lapse}',
                until=until,
            )
    for pod in state.reschedulable:
        covering = pdbs.covering(pod)
        blocking = [name for name, allowed in covering if allowed <= 0]
        if blocking or len(covering) > 1:
            namespace = (pod.get("metadata") or {}).get("namespace") or "default"
            message = (
                f"PodDisruptionBudget {namespace}/{blocking[0]} allows no disruption of pod {pod_key(pod)} now"
                if blocking
                else f"pod {pod_key(pod)} is covered by {len(covering)} PodDisruptionBudgets "
                f"({', '.join(n for n, _ in covering)}): the eviction API refuses such pods"
            )
            return Rejection(node=state.name, node_pool=state.pool_name, code="PodDisruptionBudget", message=message)
    return None


def consolidatable_since(state: NodeState) -> datetime | None:
    """When the node's pods last changed: NodeClaim status.lastPodEventTime, else when it initialized,
    else when the NodeClaim was created (Karpenter's Consolidatable condition counts from these)."""
    return claim_consolidatable_since(state.claim) if state.claim is not None else None


def claim_consolidatable_since(claim: NodeClaim) -> datetime | None:
    """`consolidatable_since` of a NodeClaim: its lastPodEventTime, else its Initialized condition's
    lastTransitionTime, else its creation time."""
    initialized = next((c for c in claim.status.conditions if c.type == INITIALIZED), None)
    return (
        parse_time(claim.status.last_pod_event_time)
        or parse_time(initialized.last_transition_time if initialized else None)
        or parse_time(claim.metadata.creation_timestamp)
    )


def consolidation_rejection(state: NodeState, now: datetime, *, empty_only: bool) -> Rejection | None:
    """Why the node is no consolidation candidate under its pool's consolidateAfter and policy (with
    `empty_only`, the caller only looks at empty nodes, and the policy does not matter)."""
    assert state.pool is not None
    disruption = state.pool.spec.disruption

    def reject(code: str, message: str, until: datetime | None = None) -> Rejection:
        return Rejection(node=state.name, node_pool=state.pool_name, code=code, message=message, until=until)

    wait = parse_duration(disruption.consolidate_after)
    if wait is None:
        return reject("ConsolidationDisabled", f"NodePool {state.pool_name} has consolidateAfter: Never")
    since = consolidatable_since(state)
    if since is not None and since + wait > now:
        left = since + wait - now
        return reject(
            "ConsolidateAfter",
            f"consolidateAfter {disruption.consolidate_after} not elapsed: pods last changed at "
            f"{since.strftime('%H:%M:%S')} UTC, {_seconds(left)} left",
            since + wait,
        )
    if not empty_only and disruption.consolidation_policy == "WhenEmpty" and not state.empty:
        return reject(
            "ConsolidationPolicy",
            f"NodePool {state.pool_name} has consolidationPolicy WhenEmpty and the node runs "
            f"{len(state.reschedulable)} pod(s)",
        )
    return None


def _seconds(value: timedelta) -> str:
    total = int(value.total_seconds())
    return f"{total // 60}m{total % 60}s" if total >= 60 else f"{total}s"


def candidate_ref(state: NodeState) -> CandidateRef:
    """The node as a command names it."""
    return CandidateRef(
        node=state.name,
        node_claim=state.claim.name if state.claim else "",
        node_pool=state.pool_name or "",
        instance_type=state.instance_type,
        capacity_type=state.capacity_type,
        zone=state.zone,
        price=state.price,
        reschedulable_pods=sorted(pod_key(p) for p in state.reschedulable),
    )


def total_price(states: Sequence[NodeState]) -> float | None:
    """What the nodes cost per hour together, or None when any price is unknown."""
    prices = [s.price for s in states]
    return None if any(p is None for p in prices) else sum(p for p in prices if p is not None)


def deleting(method: Method, reason: Reason, states: Sequence[NodeState], message: str) -> Command:
    """The command deleting these nodes (no replacement), priced at what they cost now."""
    return Command(
        method=method,
        reason=reason,
        action="Delete",
        candidates=[candidate_ref(s) for s in states],
        price=total_price(states),
        message=message,
    )
