"""The disruption controller on the embedded local stack (`DevStack`, as `benchmarks/scale.py` boots it):
the two figures of `benchmarks/disruption.py` that need the real worker. See benchmarks/README.md.

- `run_empty(nodes)`: `nodes` empty nodes under a 100% budget. A Deployment of `nodes` pods with required
  pod anti-affinity on kubernetes.io/hostname puts each pod on its own node; once every pod runs it is
  scaled to 0, and the clock runs from the last pod gone until every NodeClaim and Node is gone and every
  instance is terminated in moto.
- `run_scale_down(pods)`: Karpenter's basic scale-out workload (`scale.workload`), scaled to 10% of its
  replicas once bound; the controller consolidates until the worker has made QUIET_DECISIONS decisions
  (counted by its metrics: the leader's look ahead every 10 s and the controller's own; the controller
  runs a round only for news, so its round counter is no clock) since the controller last executed a
  command: more than a validation's worth, so a command being validated is not missed. Then the fleet's
  hourly price (the remaining NodeClaims' instance types) over the LP lower bound of covering the
  remaining pods' cpu and memory requests with the NodePool's allowed instance types.
- `run_replace_wait(nodes, ready_delay)`: how soon a replace command goes on once its replacement is up.
  `nodes` one-pod nodes (consolidation off) on a stack whose kubelet turns a Node Ready `ready_delay`
  seconds after it joins, as a real node takes tens of seconds to; then a manual replace of each node in
  turn (the controller's `replace` signal, as `nodeflow replace` sends it). Per command, the seconds from
  its replacement's Initialized condition until the original NodeClaim is deleting (the controller's
  `delete` signal reached it), each mark seen by polling every REPLACE_POLL_SECONDS.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.karpenter_examples import condition
from benchmarks.scale import NAMESPACE, POD_SHAPES, count_by, instances, poll, rounded, warm_stack, workload
from benchmarks.scheduling import lp_lower_bound

EMPTY_APP = "empty-bench"
TARGET_SECONDS_EMPTY = 120.0
TARGET_PRICE_RATIO = 1.15
SCALE_DOWN_FRACTION = 0.1
QUIET_DECISIONS = 6
DECISIONS = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count"
SETTLED_LOOKS = "nodeflow_disruption_settled_looks_total"
POLL_SECONDS = 0.5
REPLACE_APP = "replace-bench"
REPLACE_POLL_SECONDS = 0.1
Obj = dict[str, Any]


def empty_workload(nodes: int) -> str:
    """The default NodePool with a 100% budget and consolidateAfter 0s (cpu limit lifted), and a Deployment
    of `nodes` small pods that each need a node of their own (required hostname anti-affinity)."""
    return f"""apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  limits: {{cpu: "100000"}}
  disruption:
    budgets: [{{nodes: "100%"}}]
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {EMPTY_APP}, namespace: {NAMESPACE}}}
spec:
  replicas: {nodes}
  selector: {{matchLabels: {{app: {EMPTY_APP}}}}}
  template:
    metadata: {{labels: {{app: {EMPTY_APP}}}}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {{matchLabels: {{app: {EMPTY_APP}}}}}
      containers:
        - name: app
          image: registry.k8s.io/pause:3.9
          resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}
"""


# -- observing the controller --------------------------------------------------------------------------


def executed(line: str) -> bool:
    """Whether a line of the controller's `recent` decisions records a command it executed."""
    return ": executing;" in line and not line.startswith(("abandoned", "rolled back", "decision failed"))


def decisions_made(metrics_url: str) -> int:
    """How many times the worker serving `metrics_url` has looked at the cluster for disruption: the
    decisions it made (`karpenter_voluntary_disruption_decision_evaluation_duration_seconds` count,
    method `all`) and the leader's look aheads that found the cluster settled (SETTLED_LOOKS), each as good
    as a decision that found nothing new. Asks for those two series only (prometheus-client's `name[]`
    filter): the whole exposition holds the catalog's thousands of offering series, and callers poll
    this every second."""
    import urllib.parse
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    only = urllib.parse.urlencode([("name[]", DECISIONS), ("name[]", SETTLED_LOOKS)])
    with urllib.request.urlopen(f"{metrics_url}?{only}", timeout=10) as response:
        text = response.read().decode()
    return sum(
        int(sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if (sample.name == DECISIONS and sample.labels.get("method") == "all") or sample.name == SETTLED_LOOKS
    )


@dataclass
class ControllerWatch:
    """Follows the disruption controller's `status` query: its round counter, and the commands it executed
    (new lines of its recent decisions) since `start()`."""

    address: str
    metrics_url: str
    rounds_at_start: int = 0
    rounds: int = 0
    commands: list[str] = field(default_factory=list)
    decisions_at_last_command: int = 0  # decisions made when the last new executed command was seen
    _seen: set[str] = field(default_factory=set)

    def _state(self) -> Any:
        """The controller's `DisruptionState`, queried now."""
        from temporalio.client import Client
        from temporalio.contrib.pydantic import pydantic_data_converter

        from workflows.disruption import WORKFLOW_ID, DisruptionState
        from workflows.messages import Query

        async def query() -> DisruptionState:
            client = await Client.connect(self.address, data_converter=pydantic_data_converter)
            state: DisruptionState = await client.get_workflow_handle(WORKFLOW_ID).query(
                Query.STATUS, result_type=DisruptionState
            )
            return state

        return asyncio.run(query())

    def start(self) -> None:
        """Count from now: rounds and commands before this are not reported."""
        state = self._state()
        self.rounds_at_start = self.rounds = state.rounds
        self.decisions_at_last_command = decisions_made(self.metrics_url)
        self._seen = set(state.recent)

    def update(self) -> int:
        """Read the status once and count the executed commands that appeared since; the rounds so far.
        (A command's line names its candidates, so a new command is a new line.)"""
        state = self._state()
        for line in state.recent:
            if line not in self._seen and executed(line):
                self.commands.append(line)
                self.decisions_at_last_command = decisions_made(self.metrics_url)
        self._seen |= set(state.recent)
        self.rounds = state.rounds
        return self.rounds

    def quiet(self) -> bool:
        """QUIET_DECISIONS decisions made since the last new executed command (or since `start()`)."""
        return decisions_made(self.metrics_url) - self.decisions_at_last_command >= QUIET_DECISIONS

    def report(self) -> dict[str, Any]:
        """The JSON fields: rounds and executed commands since `start()`, each command as [method, action]."""
        return {
            "controller_rounds": self.rounds - self.rounds_at_start,
            "commands": len(self.commands),
            "command_methods": [line.split(" ", 2)[:2] for line in self.commands],
        }


def _pods(stack: Any, app: str) -> list[Obj]:
    """The pods labelled app=`app`."""
    from kube import resources as r

    return stack.kube.list(r.POD, namespace=NAMESPACE, label_selector=f"app={app}")


def _running(pods: list[Obj]) -> int:
    """How many of the pods are Running."""
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")


def _scale(stack: Any, name: str, replicas: int) -> None:
    """Set the Deployment's replicas."""
    from kube import resources as r

    stack.kube.patch(r.DEPLOYMENT, name, {"spec": {"replicas": replicas}}, namespace=NAMESPACE)


def _wait(check: Callable[[], bool], timeout: float, stack: Any) -> bool:
    """`poll` that also gives up when a child process of the stack died."""
    return poll(lambda: bool(stack.dead_children()) or check(), timeout, POLL_SECONDS) and not stack.dead_children()


def _judged(result: dict[str, Any], errors: list[str], field: str, target: float) -> dict[str, Any]:
    """`result` with the stack's `errors` (when a child process died), its target (`field` at most
    `target`) and whether it was met."""
    if errors:
        result["errors"] = errors
    value = result.get(field)
    result["targets"] = {field: target}
    result["targets_met"] = value is not None and value <= target
    return result


# -- (a) empty nodes -----------------------------------------------------------------------------------


def run_empty(nodes: int, timeout: float = 900.0, state_dir: Path | None = None) -> dict[str, Any]:
    """`nodes` empty nodes under a 100% budget: seconds from the last pod gone until every NodeClaim, Node
    and instance is gone; see the module docstring."""
    from kube import resources as r

    result: dict[str, Any] = {"benchmark": "empty-nodes", "empty_nodes": nodes}
    with warm_stack(state_dir) as stack:
        began = time.monotonic()
        stack.apply_text(empty_workload(nodes), "empty-nodes workload")
        up = _wait(lambda: _running(_pods(stack, EMPTY_APP)) >= nodes, timeout, stack)
        result["seconds_to_all_running"] = rounded(time.monotonic() - began) if up else None
        result["nodeclaims_created"] = len(stack.kube.list(r.NODECLAIM))
        if up:
            watch = ControllerWatch(stack.temporal_address, stack.worker_metrics_url())
            watch.start()
            _scale(stack, EMPTY_APP, 0)
            _wait(lambda: not _pods(stack, EMPTY_APP), timeout, stack)
            gone_at = time.monotonic()
            rounds_at_last_pod = watch.update()
            marks: dict[str, float] = {}

            def all_gone() -> bool:
                claims = stack.kube.list(r.NODECLAIM)
                deleting = sum(1 for c in claims if c["metadata"].get("deletionTimestamp"))
                if deleting or len(claims) < nodes:
                    marks.setdefault("first", time.monotonic() - gone_at)
                if deleting == len(claims):
                    marks.setdefault("all", time.monotonic() - gone_at)
                watch.update()
                return not claims and not stack.kube.list(r.NODE) and not instances(stack, live=True)

            done = _wait(all_gone, timeout, stack)
            result.update(
                seconds_to_first_nodeclaim_deleting=rounded(marks.get("first")),
                seconds_to_all_nodeclaims_deleting=rounded(marks.get("all")),
                seconds_to_all_gone=rounded(time.monotonic() - gone_at) if done else None,
                nodeclaims_left=len(stack.kube.list(r.NODECLAIM)),
                nodes_left=len(stack.kube.list(r.NODE)),
                instances_left=len(instances(stack, live=True)),
                controller_rounds_after_last_pod=watch.rounds - rounds_at_last_pod,
                **watch.report(),
            )
        errors = stack.dead_children()
    return _judged(result, errors, "seconds_to_all_gone", TARGET_SECONDS_EMPTY)


# -- (c) fleet price after scaling down ----------------------------------------------------------------


def fleet_and_bound(stack: Any) -> dict[str, Any]:
    """The hourly price of the NodeClaims not being deleted, and the LP lower bound of the bound pods'
    cpu and memory requests on the default NodePool's instance types, as its scheduler sees them (the
    built-in catalog under its EC2NodeClass: allocatable after overhead, the cheapest allowed offering)."""
    from apis import labels as L
    from apis.ec2nodeclass import EC2NodeClass
    from apis.nodepool import NodePool
    from cloudprovider.aws.instancetypes.catalog import load_builtin_catalog
    from cloudprovider.aws.pricing.tables import load_price_table
    from kube import resources as r
    from scheduling.constraints.resources import pod_requests
    from scheduling.provisioning.pools import build_pools
    from scheduling.provisioning.provisionable import is_bound

    catalog = load_builtin_catalog(stack.config.region)
    pools = build_pools(
        [NodePool.model_validate(p) for p in stack.kube.list(r.NODEPOOL)],
        [EC2NodeClass.model_validate(c) for c in stack.kube.list(r.EC2NODECLASS)],
        catalog,
        [],
        {},
    )
    pool = next(p for p in pools if p.name == "default")
    reqs = pool.type_reqs(pool.reqs)
    offers = [(price, o.allocatable) for o in pool.options if o.compatible(reqs) and (price := o.price(reqs))]
    demand = {"cpu": 0, "memory": 0}
    pods = [p for p in stack.kube.list(r.POD, namespace=NAMESPACE) if is_bound(p)]
    for pod in pods:
        requests = pod_requests(pod["spec"])
        for name in demand:
            demand[name] += requests.get(name, 0)
    spot = {it.name: min((o.price for o in it.offerings if o.capacity_type == "spot"), default=0.0) for it in catalog}
    table = load_price_table()
    claims = [c for c in stack.kube.list(r.NODECLAIM) if not c["metadata"].get("deletionTimestamp")]
    price = 0.0
    for claim in claims:
        labels = claim["metadata"].get("labels") or {}
        kind = labels.get(L.INSTANCE_TYPE, "")
        on_demand = labels.get(L.CAPACITY_TYPE) != L.CAPACITY_TYPE_SPOT
        price += (table.on_demand(kind) or 0.0) if on_demand else spot.get(kind, 0.0)
    bound = lp_lower_bound(demand, offers) if pods else 0.0
    whole = lp_lower_bound(demand, offers, integral=True) if pods else 0.0
    return {
        "pods_left": len(pods),
        "nodeclaims_left": len(claims),
        "instance_types": count_by(claims, L.INSTANCE_TYPE),
        "fleet_price": round(price, 4),
        "lower_bound_price": round(bound, 4),
        "price_over_lower_bound": round(price / bound, 4) if bound else None,
        "integral_bound_price": round(whole, 4),
        "price_over_integral_bound": round(price / whole, 4) if whole else None,
    }


def run_scale_down(pods: int, timeout: float = 900.0, state_dir: Path | None = None) -> dict[str, Any]:
    """Scale-out of `pods`, down to SCALE_DOWN_FRACTION, consolidation until quiet, then price over bound."""
    from kube import resources as r
    from scheduling.provisioning.provisionable import is_bound

    result: dict[str, Any] = {"benchmark": "scale-down", "pods": pods}
    with warm_stack(state_dir) as stack:
        stack.apply_text(workload(pods), "scale workload")
        bound = _wait(lambda: sum(1 for p in stack.kube.list(r.POD, namespace=NAMESPACE) if is_bound(p)) >= pods,
                      timeout, stack)  # fmt: skip
        before = fleet_and_bound(stack)
        result["before"] = {k: before[k] for k in ("nodeclaims_left", "instance_types", "fleet_price")}
        if bound:
            watch = ControllerWatch(stack.temporal_address, stack.worker_metrics_url())
            watch.start()
            began = time.monotonic()
            for name, _, _ in POD_SHAPES:
                _scale(stack, name, max(1, round(pods // 2 * SCALE_DOWN_FRACTION)))

            def settled() -> bool:
                watch.update()
                return watch.quiet()

            quiet = _wait(settled, timeout, stack)
            # Let the last command's nodes finish going before pricing what is left.
            _wait(lambda: not any(c["metadata"].get("deletionTimestamp") for c in stack.kube.list(r.NODECLAIM)),
                  120.0, stack)  # fmt: skip
            result["seconds_to_quiet"] = rounded(time.monotonic() - began) if quiet else None
            result.update(fleet_and_bound(stack), **watch.report())
        errors = stack.dead_children()
    return _judged(result, errors, "price_over_lower_bound", TARGET_PRICE_RATIO)


# -- (d) a replace command's wait for its replacement --------------------------------------------------


def replace_workload(nodes: int) -> str:
    """The default NodePool with consolidation off (no other command interleaves) and a Deployment of
    `nodes` small pods that each need a node of their own."""
    return (
        empty_workload(nodes)
        .replace(EMPTY_APP, REPLACE_APP)
        .replace(
            """    budgets: [{nodes: "100%"}]
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s""",
            """    budgets: [{nodes: "100%"}]
    consolidateAfter: Never""",
        )
    )


def _initialized(claim: Obj) -> bool:
    return (condition(claim, "Initialized") or {}).get("status") == "True"


def _replacement_looks(address: str) -> int:
    """How many `replacements_state` activities the disruption controller's current run has scheduled."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client

    from workflows.disruption import WORKFLOW_ID

    async def count() -> int:
        client = await Client.connect(address)
        history = await client.get_workflow_handle(WORKFLOW_ID).fetch_history()
        return sum(
            1
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and e.activity_task_scheduled_event_attributes.activity_type.name == "replacements_state"
        )

    return asyncio.run(count())


def _send_replace(address: str, claim: str) -> None:
    from temporalio.client import Client

    from workflows.disruption import WORKFLOW_ID
    from workflows.messages import DisruptionSignal

    async def send() -> None:
        client = await Client.connect(address)
        await client.get_workflow_handle(WORKFLOW_ID).signal(DisruptionSignal.REPLACE, args=[claim, "benchmark"])

    asyncio.run(send())


def run_replace_wait(
    nodes: int, ready_delay: float, timeout: float = 900.0, state_dir: Path | None = None
) -> dict[str, Any]:
    """See the module docstring: per replace command, its replacement Initialized -> its original
    deleting."""
    from kube import resources as r
    from scheduling.disruption.replace import REPLACEMENT_OF_ANNOTATION

    result: dict[str, Any] = {"benchmark": "replace-wait", "nodes": nodes, "node_ready_delay": ready_delay}
    with warm_stack(state_dir, node_ready_delay=ready_delay) as stack:
        stack.apply_text(replace_workload(nodes), "replace-wait workload")
        up = _wait(
            lambda: (
                _running(_pods(stack, REPLACE_APP)) >= nodes
                and sum(1 for c in stack.kube.list(r.NODECLAIM) if _initialized(c)) >= nodes
            ),
            timeout,
            stack,
        )
        originals = sorted(c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)) if up else []
        looks_before = _replacement_looks(stack.temporal_address) if up else 0
        gaps: list[float] = []
        commands: list[dict[str, Any]] = []
        for original in originals:
            sent = time.monotonic()
            _send_replace(stack.temporal_address, original)
            marks: dict[str, float] = {}

            def original_deleting(name: str = original, marks: dict[str, float] = marks) -> bool:
                now = time.monotonic()
                for claim in stack.kube.list(r.NODECLAIM):
                    meta = claim["metadata"]
                    if (meta.get("annotations") or {}).get(REPLACEMENT_OF_ANNOTATION) == name and _initialized(claim):
                        marks.setdefault("initialized", now)
                    if meta["name"] == name and meta.get("deletionTimestamp"):
                        marks.setdefault("deleting", now)
                return "deleting" in marks

            done = poll(lambda: bool(stack.dead_children()) or original_deleting(), timeout, REPLACE_POLL_SECONDS)
            if not done or "initialized" not in marks:
                break
            gap = marks["deleting"] - marks["initialized"]
            gaps.append(gap)
            commands.append(
                {
                    "seconds_to_replacement_initialized": rounded(marks["initialized"] - sent),
                    "seconds_initialized_to_original_deleting": rounded(gap),
                }
            )
        result.update(
            commands=commands,
            seconds_initialized_to_original_deleting={
                "count": len(gaps),
                "mean": rounded(sum(gaps) / len(gaps)) if gaps else None,
                "max": rounded(max(gaps)) if gaps else None,
            },
            replacement_looks_per_command=(
                rounded((_replacement_looks(stack.temporal_address) - looks_before) / len(gaps)) if gaps else None
            ),
        )
        errors = stack.dead_children()
    if errors:
        result["errors"] = errors
    return result
