"""The disruption controller's decisions, replayed on a snapshot: what `nodeflow simulate --disruption` prints.

No I/O: given a `DisruptionInput` (from manifests, `input_from_manifests`, or read from a cluster,
activities.disruption.snapshot), `replay` runs `scheduling.disruption.decide` repeatedly. After each
command it applies the command's effect to the snapshot, as if the controller had executed it and the
command had completed:

- the candidates' Nodes, NodeClaims and pods are removed (DaemonSet and mirror pods go with their node);
- each replacement becomes an initialized Node with a NodeClaim, of the cheapest offering its (narrowed)
  requirements allow, carrying the pods the decision planned for it;
- the candidates' other reschedulable pods are bound where the provisioning solver places them on the
  remaining nodes (a Delete command's decision found they fit); nodes receiving pods, and the new nodes,
  count their consolidateAfter from `now` (their NodeClaim's `lastPodEventTime`), as Karpenter does.

It stops when a pass yields no command, or after `max_commands` commands. Every step records the fleet's
price per hour before and after (the sum of each Node's own offering: instance type, zone and capacity
type from its labels, priced in the catalog; Nodes whose price is unknown are listed, not counted).

Simplifications: every command is applied at the same `now` (a real controller spends minutes per
command, so consolidateAfter, do-not-disrupt durations and budget windows may have moved on); new nodes
carry no DaemonSet pods (the solver counts DaemonSet overhead only for new NodeClaims).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from apis import labels as L
from apis.instancetype import InstanceType
from apis.nodeclaim import NodeClaim
from apis.values.quantity import format_resource_list
from scheduling import solve
from scheduling.disruption import Command, Decision, DisruptionInput, Rejection, decide
from scheduling.disruption.candidates import is_reschedulable, offering_price
from scheduling.disruption.model import METHOD_ORDER
from scheduling.disruption.simulate import allowed_values
from scheduling.provisioning.manifests import expand
from scheduling.provisioning.provisionable import pod_key
from scheduling.types import PlannedNodeClaim, SchedulingInput

Obj = dict[str, Any]
MAX_COMMANDS = 50
# The methods whose commands the running controller executes with its default settings (the others are
# decided and recorded only); workflows.disruption.DisruptionSettings is the source, kept equal by a test.
CONTROLLER_EXECUTES = METHOD_ORDER


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _flatten(docs: Iterable[Any]) -> Iterable[Any]:
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            yield from _flatten(doc.get("items") or [])
        elif doc is not None:
            yield doc


def input_from_manifests(
    docs: Sequence[Any], instance_types: Sequence[InstanceType], now: datetime
) -> tuple[DisruptionInput, list[str]]:
    """A disruption snapshot from manifests: Nodes, NodeClaims, Pods bound with spec.nodeName, NodePools,
    EC2NodeClasses, DaemonSets, volumes and PodDisruptionBudgets (`status.disruptionsAllowed` as written,
    0 when absent). Returns the snapshot and one message per object that could not be used (the rest is
    still used). Pending pods and workloads are read but play no part in disruption decisions."""
    expanded = expand(docs, list(instance_types))
    errors = list(expanded.errors)
    pdbs: list[Obj] = []
    for doc in _flatten(docs):
        if isinstance(doc, dict) and doc.get("kind") == "PodDisruptionBudget":
            spec = doc.get("spec") or {}
            if not isinstance(spec.get("selector"), dict):
                errors.append(f'PodDisruptionBudget "{_name(doc)}": spec.selector: required')
                continue
            pdbs.append(dict(doc))
    cluster = expanded.input.model_copy(update={"pods": []})
    return DisruptionInput(cluster=cluster, pod_disruption_budgets=pdbs, now=now), errors


@dataclass
class FleetPrice:
    """The fleet's $/h: the sum over Nodes with a known price; `unpriced` names the others."""

    per_hour: float
    nodes: int
    unpriced: list[str] = field(default_factory=list)

    def to_json(self) -> Obj:
        return {"pricePerHour": round(self.per_hour, 6), "nodes": self.nodes, "unpriced": self.unpriced}


def fleet_price(cluster: SchedulingInput) -> FleetPrice:
    """Each Node priced at its own offering (labels node.kubernetes.io/instance-type, zone, capacity type)."""
    types = {it.name: it for it in cluster.instance_types}
    total, unpriced = 0.0, []
    for node in cluster.nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        price = offering_price(
            types,
            labels.get(L.INSTANCE_TYPE, ""),
            labels.get(L.ZONE, ""),
            labels.get(L.CAPACITY_TYPE, L.CAPACITY_TYPE_ON_DEMAND),
        )
        if price is None:
            unpriced.append(_name(node))
        else:
            total += price
    return FleetPrice(total, len(cluster.nodes), sorted(unpriced))


@dataclass
class NewNode:
    """A replacement as applied to the snapshot: the offering chosen and the pods it carries."""

    node: str
    node_pool: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    pods: list[str]
    options: list[str] = field(default_factory=list)  # the instance types the replacement may launch as

    def to_json(self) -> Obj:
        return {
            "node": self.node,
            "nodePool": self.node_pool,
            "instanceType": self.instance_type,
            "zone": self.zone,
            "capacityType": self.capacity_type,
            "price": self.price,
            "pods": self.pods,
            "instanceTypeOptions": self.options,
        }


@dataclass
class Step:
    """One command and what applying it did to the fleet."""

    command: Command
    before: FleetPrice
    after: FleetPrice
    new_nodes: list[NewNode] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # pods the replay could not place, and the like

    @property
    def executed_by_controller(self) -> bool:
        return self.command.method in CONTROLLER_EXECUTES

    def to_json(self, index: int) -> Obj:
        body = self.command.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"replacements"})
        return {
            "step": index,
            **body,
            "replacements": [n.to_json() for n in self.new_nodes],
            "fleetPriceBefore": round(self.before.per_hour, 6),
            "fleetPriceAfter": round(self.after.per_hour, 6),
            "savingsPerHour": round(self.before.per_hour - self.after.per_hour, 6),
            "executedByController": self.executed_by_controller,
            "notes": self.notes,
        }


@dataclass
class Replay:
    """Every command in order, the fleet price at the start and end, why it stopped, and the last
    pass's reasons for leaving the remaining nodes alone."""

    steps: list[Step]
    before: FleetPrice
    after: FleetPrice
    stopped: str
    final: Decision

    def to_json(self, errors: Sequence[str]) -> Obj:
        return {
            "fleetBefore": self.before.to_json(),
            "commands": [step.to_json(i + 1) for i, step in enumerate(self.steps)],
            "fleetAfter": self.after.to_json(),
            "savingsPerHour": round(self.before.per_hour - self.after.per_hour, 6),
            "stopped": self.stopped,
            "remaining": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in self.final.rejections],
            "budgets": [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in self.final.budgets],
            "errors": list(errors),
        }


def replay(inp: DisruptionInput, max_commands: int = MAX_COMMANDS) -> Replay:
    """Decide, apply, decide again... until no command or `max_commands` commands. `inp` is not modified."""
    current = inp.model_copy(deep=True)
    start = fleet_price(current.cluster)
    steps: list[Step] = []
    while True:
        decision = decide(current)
        if decision.command is None:
            stopped = "no command: no method finds one (each remaining node's reasons are listed)"
            break
        if len(steps) >= max_commands:
            stopped = f"stopped after {max_commands} commands (--max-commands); more would follow"
            break
        before = fleet_price(current.cluster)
        current, new_nodes, notes = apply_command(current, decision.command, len(steps) + 1)
        current.single_node_first = decision.single_node_skipped
        steps.append(Step(decision.command, before, fleet_price(current.cluster), new_nodes, notes))
    return Replay(steps, start, fleet_price(current.cluster), stopped, decision)


def cheapest_offering(claim: PlannedNodeClaim, catalog: dict[str, InstanceType]) -> tuple[float, str, str, str] | None:
    """(price, instance type, zone, capacity type) of the claim's cheapest available offering within its
    zone and capacity-type requirements; None when it has none."""
    zones = allowed_values(claim, L.ZONE)
    capacity_types = allowed_values(claim, L.CAPACITY_TYPE)
    best = None
    for name in claim.instance_types:
        it = catalog.get(name)
        for offer in it.offerings if it else []:
            if not offer.available or (zones is not None and offer.zone not in zones):
                continue
            if capacity_types is not None and offer.capacity_type not in capacity_types:
                continue
            option = (offer.price, name, offer.zone, offer.capacity_type)
            if best is None or option < best:
                best = option
    return best


def _new_node(claim: PlannedNodeClaim, name: str, offer: tuple[float, str, str, str], it: InstanceType,
              now: datetime) -> tuple[Obj, NodeClaim]:  # fmt: skip
    """An initialized Node and its NodeClaim for a replacement on the chosen offering."""
    _, type_name, zone, capacity_type = offer
    labels = {
        **it.labels,
        **claim.labels,
        L.HOSTNAME: name,
        L.INSTANCE_TYPE: type_name,
        L.ZONE: zone,
        L.CAPACITY_TYPE: capacity_type,
        L.NODEPOOL: claim.node_pool,
        L.INITIALIZED: "true",
    }
    allocatable = format_resource_list(it.allocatable())
    provider_id = f"simulated:///{zone}/{name}"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": _stamp(now)},
        "spec": {"providerID": provider_id, "taints": [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                                                        for t in claim.taints]},
        "status": {"allocatable": allocatable, "capacity": {k: str(v) for k, v in it.capacity.items()},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }  # fmt: skip
    node_claim = NodeClaim.model_validate(
        {
            "metadata": {"name": name, "labels": {L.NODEPOOL: claim.node_pool}, "creationTimestamp": _stamp(now)},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": claim.node_class}},
            "status": {
                "nodeName": name,
                "providerID": provider_id,
                "lastPodEventTime": _stamp(now),
                "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": _stamp(now)}],
            },
        }
    )
    return node, node_claim


def _bind(pod: Obj, node: str) -> Obj:
    moved = copy.deepcopy(pod)
    moved.setdefault("spec", {})["nodeName"] = node
    return moved


def apply_command(
    inp: DisruptionInput, command: Command, step: int
) -> tuple[DisruptionInput, list[NewNode], list[str]]:
    """The snapshot after `command` completed: see the module docstring. Returns the new snapshot, the
    replacement nodes created, and notes on pods that found no place (the decision said they would)."""
    cluster = inp.cluster
    gone = {c.node for c in command.candidates}
    gone_claims = {c.node_claim for c in command.candidates}
    catalog = {it.name: it for it in cluster.instance_types}
    moving = [p for p in cluster.bound_pods if (p.get("spec") or {}).get("nodeName") in gone and is_reschedulable(p)]
    nodes = [n for n in cluster.nodes if _name(n) not in gone]
    claims = [c for c in cluster.node_claims if c.name not in gone_claims and c.status.node_name not in gone]
    bound = [p for p in cluster.bound_pods if (p.get("spec") or {}).get("nodeName") not in gone]
    notes: list[str] = []
    new_nodes: list[NewNode] = []
    by_key = {pod_key(p): p for p in moving}
    placed: set[str] = set()
    receivers: set[str] = set()

    def add_node(claim: PlannedNodeClaim, pods: Sequence[str]) -> None:
        offer = cheapest_offering(claim, catalog)
        if offer is None:
            notes.append(f"replacement for {', '.join(pods)}: no offering in the catalog; pods left pending")
            return
        name = f"simulated-{step}-{len(new_nodes) + 1}"
        node, node_claim = _new_node(claim, name, offer, catalog[offer[1]], inp.now)
        nodes.append(node)
        claims.append(node_claim)
        mine = [key for key in pods if key in by_key and key not in placed]
        bound.extend(_bind(by_key[key], name) for key in mine)
        placed.update(mine)
        new_nodes.append(
            NewNode(name, claim.node_pool, offer[1], offer[2], offer[3], offer[0], sorted(mine), claim.instance_types)
        )

    for replacement in command.replacements:
        add_node(replacement, replacement.pods)
    rest = [p for key, p in by_key.items() if key not in placed]
    if rest:
        pending = [{**p, "spec": {k: v for k, v in (p.get("spec") or {}).items() if k != "nodeName"}} for p in rest]
        plan = solve(
            cluster.model_copy(update={"pods": pending, "bound_pods": bound, "nodes": nodes, "node_claims": claims})
        )
        for placement in plan.existing_nodes:
            keys = [k for k in placement.pods if k in by_key and k not in placed]
            bound.extend(_bind(by_key[k], placement.name) for k in keys)
            placed.update(keys)
            receivers.add(placement.name)
        for planned in plan.node_claims:
            notes.append(f"pods {', '.join(planned.pods)} needed a new node the decision did not plan; added")
            add_node(planned, planned.pods)
        notes.extend(f"pod {u.pod} found no place: {u.reason}" for u in plan.unschedulable)
    stamp = _stamp(inp.now)
    claims = [
        c.model_copy(update={"status": c.status.model_copy(update={"last_pod_event_time": stamp})})
        if c.status.node_name in receivers
        else c
        for c in claims
    ]
    updated = cluster.model_copy(update={"nodes": nodes, "node_claims": claims, "bound_pods": bound})
    return inp.model_copy(update={"cluster": updated}), new_nodes, notes


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}/h"


def describe_rejections(rejections: Sequence[Rejection]) -> list[str]:
    """One line per rejection: `node [method] Code: message`."""
    return [f"{r.node} [{r.method or 'candidate'}] {r.code}: {r.message}" for r in rejections]


def to_table(result: Replay, errors: Sequence[str] = ()) -> str:
    """The replay for people: the fleet before, one row per command with prices, the total, why the rest
    stays."""
    lines = [f"FLEET BEFORE: {result.before.nodes} node(s), {_money(result.before.per_hour)}"]
    if result.before.unpriced:
        lines.append(f"  price unknown (not counted): {', '.join(result.before.unpriced)}")
    if result.steps:
        lines.append(f"COMMANDS ({len(result.steps)})")
        header = f"  {'#':>2}  {'METHOD':<24} {'ACTION':<7} {'FLEET BEFORE':>13} {'FLEET AFTER':>13}  WHAT"
        lines.append(header)
        for index, step in enumerate(result.steps, 1):
            command = step.command
            executed = "" if step.executed_by_controller else " [decided, not executed by default]"
            lines.append(
                f"  {index:>2}  {command.method:<24} {command.action:<7} {_money(step.before.per_hour):>13} "
                f"{_money(step.after.per_hour):>13}  {command.message}{executed}"
            )
            for candidate in command.candidates:
                lines.append(
                    f"        - {candidate.node} ({candidate.node_pool}, {candidate.instance_type} "
                    f"{candidate.capacity_type} {candidate.zone}, {_money(candidate.price)}, "
                    f"{len(candidate.reschedulable_pods)} pod(s))"
                )
            for new in step.new_nodes:
                lines.append(
                    f"        + {new.node} ({new.node_pool}, {new.instance_type} {new.capacity_type} {new.zone}, "
                    f"{_money(new.price)}, {len(new.pods)} pod(s))"
                )
            lines.extend(f"        note: {note}" for note in step.notes)
    else:
        lines.append("COMMANDS: none")
    saved = result.before.per_hour - result.after.per_hour
    lines.append(
        f"TOTAL: {_money(result.before.per_hour)} -> {_money(result.after.per_hour)} "
        f"(saves {_money(saved)}), {result.after.nodes} node(s) after {len(result.steps)} command(s)"
    )
    lines.append(f"STOPPED: {result.stopped}")
    if result.final.rejections:
        lines.append("REMAINING NODES LEFT ALONE")
        lines.extend(f"  {line}" for line in describe_rejections(result.final.rejections))
    if errors:
        lines.append(f"ERRORS ({len(errors)})")
        lines.extend(f"  {e}" for e in errors)
    return "\n".join(lines)
