"""`nodeflow explain NODE_OR_NODECLAIM`: is this node a disruption candidate now, and if not, why not.

    nodeflow explain ip-10-0-1-1 [--kubeconfig FILE] [--context NAME] [--temporal-address HOST:PORT] [-o text|json]

The cluster is found as kubectl finds it: --kubeconfig and --context, else the KUBECONFIG files, else
~/.kube/config, else the pod's service account (workers.cli.cluster_reads.build_kube).

Reads the cluster as the disruption controller does (activities.disruption.snapshot: Nodes, NodeClaims,
bound pods, PodDisruptionBudgets, NodePools, EC2NodeClasses), with the built-in AWS instance-type catalog
(or --instance-types FILE), runs the controller's decision (scheduling.disruption.decide) and prints:

- the node (NodeClaim, NodePool, instance type, capacity type, zone, price);
- whether this pass's command disrupts it (and the command), else every reason it is left alone
  (`Decision.why`): not managed or not initialized, do-not-disrupt on the Node, NodeClaim or a pod (and
  until when), a PodDisruptionBudget, consolidateAfter not elapsed (and how long is left), the
  consolidation policy, its NodePool's budget (with the schedule window), no cheaper replacement (with
  the prices compared), and so on;
- its NodePool's budget lines (allowance per reason, which budget sets it);
- its disruption history: the NodeClaim's conditions DisruptionReason, Drifted, Expired and
  Consolidatable, the Events about the Node and the NodeClaim, and the disruption controller's recent
  decisions that mention it (the `status` query of the Temporal workflow `disruption`). When Temporal
  cannot be reached that part is one line saying so, and the rest is still printed.

A Node name or a NodeClaim name both work. --now judges at another time (budget windows, consolidateAfter,
do-not-disrupt durations). Exit codes: 0 explained, 1 unknown name or the cluster could not be read,
2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TextIO

from apis import labels as L
from apis.nodeclaim import CONSOLIDATABLE, DISRUPTION_REASON, DRIFTED, EXPIRED, NodeClaim
from kube import resources as r
from kube.types import Kube, Obj
from scheduling.disruption import Command, Decision, DisruptionInput, PoolBudget, Rejection, decide
from scheduling.disruption.candidates import offering_price
from workers import settings as settings_mod
from workers.cli.cluster_reads import ClusterReadError, add_context_argument, build_kube, parse_now
from workers.cli.disruption_dryrun import apply_command
from workers.cli.process_exit import exiting_after
from workers.cli.simulate import InputError, load_catalog
from workers.temporal.errors import TemporalSettingError

HISTORY_CONDITIONS = (DISRUPTION_REASON, DRIFTED, EXPIRED, CONSOLIDATABLE)
EVENT_LIMIT = 10
LOOK_AHEAD = 10
TEMPORAL_TIMEOUT_SECONDS = 5.0
FIND_NAMES = "list them with `kubectl get nodes`, `kubectl get nodeclaims -o wide` or `nodeflow status`"


class ExplainError(Exception):
    """A user-facing failure (unknown name, unreadable cluster): the message says what to do."""


@dataclass
class Target:
    """What the name resolved to: a Node and its NodeClaim, or a NodeClaim without a Node yet."""

    node: str | None
    claim: NodeClaim | None


def resolve(inp: DisruptionInput, name: str) -> Target:
    """A Node of that name (with its NodeClaim: status.nodeName, else providerID), else a NodeClaim of that
    name (with its Node, when registered). Raises ExplainError listing how to find names."""
    cluster = inp.cluster
    nodes = {str((n.get("metadata") or {}).get("name", "")): n for n in cluster.nodes}
    if name in nodes:
        provider_id = (nodes[name].get("spec") or {}).get("providerID") or ""
        claim = next((c for c in cluster.node_claims if c.status.node_name == name), None) or next(
            (c for c in cluster.node_claims if provider_id and c.status.provider_id == provider_id), None
        )
        return Target(name, claim)
    claim = next((c for c in cluster.node_claims if c.name == name), None)
    if claim is None:
        raise ExplainError(f'no Node and no NodeClaim named "{name}": {FIND_NAMES}')
    by_provider = next(
        (n for n, obj in nodes.items() if claim.status.provider_id and
         (obj.get("spec") or {}).get("providerID") == claim.status.provider_id),
        None,
    )  # fmt: skip
    node = claim.status.node_name if claim.status.node_name in nodes else by_provider
    return Target(node, claim)


@dataclass
class ControllerHistory:
    """The disruption controller's recent decisions mentioning the node, or why they could not be read."""

    reachable: bool
    decisions: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class Explanation:
    """Everything `explain` prints; `to_json` is the `-o json` contract."""

    name: str
    node: str | None
    node_claim: str | None
    node_pool: str | None
    instance_type: str = ""
    capacity_type: str = ""
    zone: str = ""
    price: float | None = None
    status: str = "blocked"  # chosen | blocked | not-chosen | no-node
    summary: str = ""
    command: Command | None = None
    reasons: list[Rejection] = field(default_factory=list)
    budget: PoolBudget | None = None
    conditions: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    controller: ControllerHistory | None = None
    errors: list[str] = field(default_factory=list)
    # When an earlier method's command ended the pass before the node was looked at: the passes after that
    # command (and the next ones) completed, as `simulate --disruption` replays them, until one disrupts or
    # rejects the node.
    later_commands: list[str] = field(default_factory=list)
    later_status: str = ""  # chosen | blocked | not-chosen ("" when not looked ahead)
    later_command: Command | None = None
    later_reasons: list[Rejection] = field(default_factory=list)

    @property
    def chosen(self) -> bool:
        return self.status == "chosen"

    def budget_lines(self) -> list[str]:
        if self.budget is None:
            return []
        head = f"NodePool {self.budget.node_pool}: {self.budget.total} node(s), {self.budget.disrupting} disrupting"
        return [head, *(f"  {limit.describe(self.budget.node_pool)}" for limit in self.budget.limits)]

    def to_json(self) -> Obj:
        def dump(model: Any) -> Any:
            return None if model is None else model.model_dump(mode="json", by_alias=True, exclude_none=True)

        controller = self.controller
        return {
            "name": self.name,
            "node": self.node,
            "nodeClaim": self.node_claim,
            "nodePool": self.node_pool,
            "instanceType": self.instance_type,
            "capacityType": self.capacity_type,
            "zone": self.zone,
            "price": self.price,
            "candidate": self.chosen,
            "status": self.status,
            "summary": self.summary,
            "command": dump(self.command),
            "reasons": [dump(reason) for reason in self.reasons],
            "budget": dump(self.budget),
            "budgetLines": self.budget_lines(),
            "history": {
                "conditions": self.conditions,
                "events": self.events,
                "controller": None
                if controller is None
                else {"reachable": controller.reachable, "decisions": controller.decisions, "error": controller.error},
            },
            "later": None
            if not self.later_status
            else {
                "after": self.later_commands,
                "status": self.later_status,
                "command": dump(self.later_command),
                "reasons": [dump(reason) for reason in self.later_reasons],
            },
            "errors": self.errors,
        }


def explain(inp: DisruptionInput, name: str, decision: Decision | None = None) -> Explanation:
    """The node's standing in one decision over `inp` (decided here unless given). Pure; the history
    (events, controller decisions) is added by the caller. Raises ExplainError for an unknown name."""
    target = resolve(inp, name)
    decision = decision if decision is not None else decide(inp)
    claim = target.claim
    pool = claim.metadata.labels.get(L.NODEPOOL) if claim else None
    exp = Explanation(name=name, node=target.node, node_claim=claim.name if claim else None, node_pool=pool)
    exp.command = decision.command
    if claim is not None:
        exp.conditions = claim_conditions(claim)
    if target.node is None:
        exp.status = "no-node"
        exp.summary = f"not a disruption candidate: NodeClaim {name} has no registered Node yet"
        exp.budget = next((b for b in decision.budgets if b.node_pool == pool), None)
        return exp
    node = next(n for n in inp.cluster.nodes if (n.get("metadata") or {}).get("name") == target.node)
    labels = (node.get("metadata") or {}).get("labels") or {}
    exp.node_pool = labels.get(L.NODEPOOL) or pool
    exp.instance_type = labels.get(L.INSTANCE_TYPE, "")
    exp.capacity_type = labels.get(L.CAPACITY_TYPE, L.CAPACITY_TYPE_ON_DEMAND)
    exp.zone = labels.get(L.ZONE, "")
    types = {it.name: it for it in inp.cluster.instance_types}
    exp.price = offering_price(types, exp.instance_type, exp.zone, exp.capacity_type)
    exp.budget = next((b for b in decision.budgets if b.node_pool == exp.node_pool), None)
    exp.reasons = decision.why(target.node)
    command = decision.command
    if command is not None and any(c.node == target.node for c in command.candidates):
        exp.status = "chosen"
        exp.summary = f"disruption candidate now: this pass's command is {_command_line(command)}"
    elif exp.reasons:
        exp.status = "blocked"
        exp.summary = f"not disrupted now: {len(exp.reasons)} reason(s) below"
    else:
        exp.status = "not-chosen"
        exp.summary = (
            "eligible, but this pass's command came first and it was not evaluated further; the controller "
            "decides again every 10 s"
            if command is not None
            else "eligible, but no method found a command for it"
        )
        if command is not None:
            look_ahead(exp, inp, command, target.node)
    return exp


def look_ahead(exp: Explanation, inp: DisruptionInput, command: Command, node: str, passes: int = LOOK_AHEAD) -> None:
    """Apply this pass's command (workers.cli.disruption_dryrun.apply_command) and decide again, up to `passes`
    times, until a pass disrupts or rejects the node; records what that pass says in `exp.later_*`."""
    current = inp
    for step in range(1, passes + 1):
        exp.later_commands.append(_command_line(command))
        current, _, _ = apply_command(current, command, step)
        decision = decide(current)
        next_command = decision.command
        if next_command is not None and any(c.node == node for c in next_command.candidates):
            exp.later_status, exp.later_command = "chosen", next_command
            return
        if decision.why(node):
            exp.later_status, exp.later_reasons = "blocked", decision.why(node)
            return
        if next_command is None:
            exp.later_status = "not-chosen"
            return
        command = next_command
    exp.later_status = "not-chosen"


def _command_line(command: Command) -> str:
    names = ", ".join(c.node for c in command.candidates)
    return f"{command.method} {command.action} of {names}: {command.message}"


def claim_conditions(claim: NodeClaim) -> list[str]:
    """The NodeClaim's disruption conditions as lines: `Type=Status (Reason) since T: message`."""
    lines = []
    for condition in claim.status.conditions:
        if condition.type not in HISTORY_CONDITIONS:
            continue
        reason = f" ({condition.reason})" if condition.reason else ""
        since = f" since {condition.last_transition_time}" if condition.last_transition_time else ""
        message = f": {condition.message}" if condition.message else ""
        lines.append(f"{condition.type}={condition.status}{reason}{since}{message}")
    return lines


def _event_time(event: Obj) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def node_events(events: Sequence[Obj], node: str | None, claim: str | None, limit: int = EVENT_LIMIT) -> list[str]:
    """The latest `limit` Events about the Node or the NodeClaim, oldest first, as lines:
    `time Type Reason (Kind name, xN): message`."""
    wanted = {("Node", node), ("NodeClaim", claim)}
    mine = [
        e
        for e in events
        if ((e.get("involvedObject") or {}).get("kind"), (e.get("involvedObject") or {}).get("name")) in wanted
    ]
    mine.sort(key=_event_time)
    lines = []
    for event in mine[-limit:]:
        involved = event.get("involvedObject") or {}
        count = int(event.get("count") or 1)
        times = f", x{count}" if count > 1 else ""
        lines.append(
            f"{_event_time(event) or '?'} {event.get('type', '')} {event.get('reason', '')} "
            f"({involved.get('kind')} {involved.get('name')}{times}): {event.get('message', '')}"
        )
    return lines


def mentions(line: str, names: Sequence[str | None]) -> bool:
    """Whether the line names one of `names` as a whole word (ip-10-0-1-1 is not ip-10-0-1-12)."""
    return any(name and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)", line) for name in names)


def fetch_controller_decisions(settings: settings_mod.Settings, timeout: float = TEMPORAL_TIMEOUT_SECONDS) -> list[str]:
    """The `status` query of the workflow `disruption`: its recent decisions, oldest first. Raises whatever
    connecting or querying raises (the caller reports it in one line)."""

    async def query() -> list[str]:
        from workers.temporal.client import connect  # Temporal is loaded only for this part
        from workflows.disruption import WORKFLOW_ID, DisruptionControllerWorkflow

        client = await connect(settings, timeout)
        handle = client.get_workflow_handle(WORKFLOW_ID)
        state = await handle.query(DisruptionControllerWorkflow.status, rpc_timeout=timedelta(seconds=timeout))
        return list(state.recent)

    return asyncio.run(query())


def controller_history(exp: Explanation, fetch: Callable[[], list[str]], address: str) -> ControllerHistory:
    """The controller's recent decisions that mention the node or its NodeClaim; unreachable in one line."""
    try:
        recent = fetch()
    except TemporalSettingError as err:  # already one line naming the setting (workers.temporal.client)
        return ControllerHistory(False, error=str(err))
    except Exception as err:  # no such workflow, no worker answering the query
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        text = text if len(text) <= 120 else text[:117] + "..."
        return ControllerHistory(False, error=f"Temporal at {address}: {type(err).__name__}: {text}")
    return ControllerHistory(True, [line for line in recent if mentions(line, [exp.node, exp.node_claim])])


def to_text(exp: Explanation) -> str:
    """The explanation for people."""
    what = f"Node {exp.node}" if exp.node else f"NodeClaim {exp.node_claim}"
    details = [
        f"NodeClaim {exp.node_claim}" if exp.node and exp.node_claim else "",
        f"NodePool {exp.node_pool}" if exp.node_pool else "",
        " ".join(x for x in (exp.instance_type, exp.capacity_type, exp.zone) if x),
        "" if exp.node is None else (f"${exp.price:.4f}/h" if exp.price is not None else "price unknown"),
    ]
    lines = [f"{what} ({', '.join(d for d in details if d)})", exp.summary]
    if exp.reasons:
        lines.append("why not:")
        lines.extend(f"  [{r.method or 'candidate'}] {r.code}: {r.message}" for r in exp.reasons)
    if not exp.chosen:
        lines.append(f"this pass's command: {_command_line(exp.command) if exp.command else 'none'}")
    if exp.later_status:
        lines.append(f"after {len(exp.later_commands)} command(s) complete ({'; then '.join(exp.later_commands)}):")
        if exp.later_status == "chosen" and exp.later_command is not None:
            lines.append(f"  disruption candidate: {_command_line(exp.later_command)}")
        elif exp.later_status == "blocked":
            lines.extend(f"  [{r.method or 'candidate'}] {r.code}: {r.message}" for r in exp.later_reasons)
        else:
            lines.append("  still not looked at (see `nodeflow simulate --disruption --from-cluster`)")
    if exp.budget is not None:
        pool = exp.budget.node_pool
        lines.append(f"budgets of NodePool {pool} ({exp.budget.total} node(s), {exp.budget.disrupting} disrupting):")
        lines.extend(f"  {limit.describe(pool).removeprefix(f'NodePool {pool}: ')}" for limit in exp.budget.limits)
    lines.append("history:")
    lines.extend(f"  condition {line}" for line in exp.conditions)
    lines.extend(f"  event {line}" for line in exp.events)
    if not exp.conditions and not exp.events:
        lines.append("  no disruption conditions or events")
    controller = exp.controller
    if controller is not None and not controller.reachable:
        lines.append(f"  controller decisions: unavailable ({controller.error})")
    elif controller is not None:
        lines.extend(f"  controller: {line}" for line in controller.decisions)
        if not controller.decisions:
            lines.append("  controller: no recent decision mentions it")
    lines.extend(f"error: {e}" for e in exp.errors)
    return "\n".join(lines)


# -- the command -----------------------------------------------------------------------------------------


def add_parser(subparsers: Any) -> None:
    """Register `explain` with `func`."""
    parser = subparsers.add_parser(
        "explain",
        help="why a node is (not) a disruption candidate now, and its disruption history",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", metavar="NODE_OR_NODECLAIM", help="a Node name or a NodeClaim name")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--instance-types", help="instance-type catalog (YAML or JSON list); default: built-in AWS")
    parser.add_argument("--now", default=None, help="judge at this RFC 3339 time (default: now)")
    settings_mod.add_arguments(parser)  # --kubeconfig, --temporal-address, --temporal-namespace, --region...
    add_context_argument(parser)
    parser.set_defaults(func=exiting_after(run))


def read_events(kube: Kube) -> list[Obj]:
    """Events about cluster-scoped objects (Nodes, NodeClaims) live in the namespace "default"."""
    return kube.list(r.EVENT, namespace="default")


def run(
    args: argparse.Namespace,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    kube: Kube | None = None,
    fetch: Callable[[settings_mod.Settings], list[str]] = fetch_controller_decisions,
) -> int:
    """The command; `kube` and `fetch` replace the cluster and Temporal (tests)."""
    try:
        settings = settings_mod.Settings.from_env().with_args(args)
        now = parse_now(args.now)
        catalog = load_catalog(args.instance_types, settings.region)
    except (ValueError, InputError) as problem:
        print(f"nodeflow explain: {problem}", file=err)
        return 2
    errors: list[str] = []
    try:
        from activities.disruption.snapshot import read_disruption_input

        kube = kube if kube is not None else build_kube(args.kubeconfig, getattr(args, "context", None))
        try:
            inp = read_disruption_input(kube, catalog, now=now, skipped=errors)
            events = read_events(kube)
        except Exception as problem:  # kube.errors, connection refused, TLS
            raise ClusterReadError(f"cannot read the cluster: {problem}") from problem
        exp = explain(inp, args.name)
    except (ClusterReadError, ExplainError) as problem:
        print(f"error: {problem}", file=err)
        return 1
    exp.errors = errors
    exp.events = node_events(events, exp.node, exp.node_claim)
    exp.controller = controller_history(exp, lambda: fetch(settings), settings.temporal_address)
    print(json.dumps(exp.to_json(), indent=2) if args.output == "json" else to_text(exp), file=out)
    return 0
