"""The disruption decision as an activity: read the cluster fresh (activities.disruption.snapshot) and
decide (scheduling.disruption: Karpenter's methods, the same scheduler as provisioning simulating where
pods would go). What it returns is recorded in the controller workflow's history: the command, if any,
whether the controller executes its method, and a count of rejections by code (the full per-node reasons
are what `nodeflow explain` prints). Executing a command is activities.disruption.execution.

The controller's decision first clears the `karpenter.sh/disrupted` marks nothing acts on
(activities.disruption.stale_marks), as Karpenter's controller does before each pass; the leader's look ahead, which
runs while commands are under way, does not.

The decision also publishes what it found about each node (scheduling.disruption.notices), from the same
snapshot, so no second read: each NodeClaim's `Consolidatable` condition, written only when it should
change (at most MAX_CONDITION_WRITES per decision, the rest at the next), and the `Unconsolidatable` and
`DisruptionBlocked` events on the Node and its NodeClaim, each (object, reason, message) recorded at most
once per NOTICE_DEDUPE by this worker (Karpenter dedupes these for 15 minutes). Publishing is best
effort and idempotent: a failed write is logged and retried by the next decision, never failing this one.

Metrics (activities.metrics.registry, Karpenter's names): each decision is timed
(`karpenter_voluntary_disruption_decision_evaluation_duration_seconds`, method `all`: one pass tries every
method), a pass out of time counts in `karpenter_voluntary_disruption_consolidation_timeouts_total`, and
the gauges
`karpenter_voluntary_disruption_eligible_nodes` (by reason) and `karpenter_nodepools_allowed_disruptions`
(by pool and reason) show the latest decision's view. A look ahead skipped because the cluster is
settled counts in `nodeflow_disruption_settled_looks_total`. A command counts in
`karpenter_voluntary_disruption_decisions_total` when it is executed, after its validation, as Karpenter
counts it (activities.disruption.execution), not when decided; one abandoned at its validation counts in
`karpenter_voluntary_disruption_failed_validations_total`, and the latest decision's budgets also set
`karpenter_nodepools_nodes_consuming_budgets` (the pool's nodes being disrupted, per reason). Each
consolidation move the Balanced policy judged counts once per pool among its candidates in
`karpenter_consolidation_moves_total` (the move's `decision`, `approved` or `rejected`, and the pool's
`policy`), and a Balanced pool's score is observed in `karpenter_consolidation_score` with its own verdict.
Like the evaluation time, these count the moves of every decision, the look ahead's and the controller's.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, Field, ValidationError
from temporalio import activity

from activities import nodepool_status
from activities.disruption.snapshot import read_disruption_input, with_watched
from activities.disruption.stale_marks import clear_stale_marks
from activities.heartbeat import heartbeating
from activities.metrics.labels import consolidation_type, disruption_reason
from activities.metrics.registry import Metrics
from activities.nodeclaim import ownership
from apis.meta import rfc3339, set_condition
from apis.nodeclaim import CONSOLIDATABLE, NodeClaim
from apis.nodepool import NodePool
from cloudprovider.types import CloudProvider
from kube import ops as kubeops
from kube.errors import KubeError
from kube.types import Kube, Obj
from kube.watch_cache import WatchCache
from scheduling.disruption import Command, Decision, DisruptionInput, decide
from scheduling.disruption.candidates import node_claims_by_node
from scheduling.disruption.notices import consolidatable_changes, consolidatable_condition, notices
from scheduling.disruption.settled import Settlement, StateKey, settle, side_key, state_key
from scheduling.provisioning.catalog import OptionCache
from scheduling.types import SchedulingPolicies

log = logging.getLogger(__name__)
MAX_CONDITION_WRITES = 200
NOTICE_DEDUPE = timedelta(minutes=15)


class DecideInput(BaseModel):
    """`executable_methods`: the methods whose commands the controller executes; a command of another
    method is returned with `executable=False` (recorded, not acted on). `single_node_first`: the previous
    pass's skipped single-node candidates. `validating`: the command this decision validates (decided a
    validation period ago); one it does not confirm counts as a failed validation."""

    executable_methods: list[str] = Field(default_factory=lambda: ["Emptiness"])
    spot_to_spot_consolidation: bool = False
    single_node_first: list[str] = Field(default_factory=list)
    validating: Command | None = None
    # The NodeClaims the controller signalled to delete lately: their disruption marks are in use.
    handed_over: list[str] = Field(default_factory=list)


class DisruptionRound(BaseModel):
    """One decision as the workflow records it."""

    command: Command | None = None
    executable: bool = False
    rejections: dict[str, int] = Field(default_factory=dict)  # rejection code -> how many nodes
    candidates_seen: int = 0
    single_node_skipped: list[str] = Field(default_factory=list)
    timed_out: bool = False

    def candidate_names(self) -> list[str]:
        return sorted(c.node_claim for c in self.command.candidates) if self.command else []

    def summary(self) -> str:
        if self.command is None:
            return f"no command; rejected: {self.rejections or 'none'}"
        verb = "executing" if self.executable else "decided, not executed (method not enabled)"
        names = ", ".join(self.candidate_names())
        return f"{self.command.method} {self.command.action} of {names}: {verb}; {self.command.message}"


def confirms(command: Command, again: DisruptionRound) -> bool:
    """Whether `again`, decided a validation period after `command`, confirms it: an executable command of
    the same method and action, on the same candidates (Karpenter's validation: anything else abandons the
    command). The controller acts on this, and a decision validating a command counts by it."""
    repeat = again.command
    return (
        repeat is not None
        and again.executable
        and (command.method, command.action) == (repeat.method, repeat.action)
        and sorted(c.node_claim for c in command.candidates) == again.candidate_names()
    )


def setting_consolidatable(pool: NodePool, now: datetime) -> Callable[[Obj], bool]:
    """A status mutation for a NodeClaim (`ownership.update(..., subresource="status")`): its
    Consolidatable condition as it should be at `now` under `pool`, judged on the object as read (a pod
    event stamped since the snapshot counts); False when nothing changes."""
    stamp = rfc3339(now)

    def mutate(obj: Obj) -> bool:
        try:
            claim = NodeClaim.model_validate(obj)
        except ValidationError:
            return False
        wanted = consolidatable_condition(claim, pool, now)
        conditions = [c for c in claim.status.conditions if c.type != CONSOLIDATABLE]
        if wanted is not None:
            conditions = set_condition(claim.status.conditions, CONSOLIDATABLE, *wanted, stamp)
        new = claim.status.model_copy(update={"conditions": conditions}).to_kube()
        if new == obj.get("status"):
            return False
        obj["status"] = new
        return True

    return mutate


@dataclass(frozen=True)
class LookAhead:
    """What the leader's disruption looks found (DisruptionActivities.look_ahead): the settlement, and the
    watches' event count taken before the last full read of the cluster (None: no count)."""

    settlement: Settlement | None
    mark: int | None = None


def approval(approved: bool) -> str:
    """Karpenter's `decision` label of a Balanced verdict."""
    return "approved" if approved else "rejected"


class DisruptionActivities:
    """Constructed by the composition root with the boundaries. The instance-type options one decision
    builds are kept for the next (scheduling.provisioning.catalog.OptionCache)."""

    def __init__(
        self,
        kube: Kube,
        cloud: CloudProvider,
        recorder: kubeops.Recorder,
        metrics: Metrics | None = None,
        policies: SchedulingPolicies | None = None,
    ) -> None:
        self.kube = kube
        self.policies = policies or SchedulingPolicies()
        self.options = OptionCache()
        self.cloud = cloud
        self.recorder = recorder
        self.metrics = metrics or Metrics()
        self._budget_series: set[tuple[str, str]] = set()
        self._noticed: dict[tuple[str, str, str, str], datetime] = {}  # (kind, uid, reason, message) -> when
        self._lock = threading.Lock()

    def snapshot(self, inp: DecideInput, watched: bool = True, cache: WatchCache | None = None) -> DisruptionInput:
        """The cluster as the decision takes it, read now (activities.disruption.snapshot; `watched` False
        leaves out what the leader watches, `cache` reads it from the leader's watch cache)."""
        return read_disruption_input(
            self.kube,
            self.cloud.instance_types(None),
            spot_to_spot_consolidation=inp.spot_to_spot_consolidation,
            single_node_first=inp.single_node_first,
            watched=watched,
            cache=cache,
            policies=self.policies,
        )

    @activity.defn(name="decide_disruption")
    def decide_disruption(self, inp: DecideInput) -> DisruptionRound:
        """Decide on a fresh snapshot (`evaluate`), for the controller to act on, first clearing the
        disruption marks nothing acts on (activities.disruption.stale_marks). Heartbeats."""
        with heartbeating():
            return self.evaluate(inp, clear_stale=True)

    def evaluate(self, inp: DecideInput, clear_stale: bool = False) -> DisruptionRound:
        """Decide on a fresh snapshot, publish what it found and record its metrics (see the module
        docstring); a decision that does not confirm the command it validates counts in
        `karpenter_voluntary_disruption_failed_validations_total`. `clear_stale`: clear the stale marks
        first (only between commands: the controller's own decision); a cleared node is a candidate from
        the next decision on."""
        snapshot = self.snapshot(inp)
        if clear_stale:
            clear_stale_marks(self.kube, snapshot, snapshot.now, inp.handed_over)
        decided = self._evaluate_on(snapshot, inp)[0]
        if inp.validating is not None and not confirms(inp.validating, decided):
            kind = consolidation_type(inp.validating.method)
            self.metrics.disruption_failed_validations.labels(consolidation_type=kind).inc()
        return decided

    def look_ahead(
        self,
        inp: DecideInput,
        memory: LookAhead | None,
        cache: WatchCache | None = None,
    ) -> tuple[DisruptionRound | None, LookAhead]:
        """`evaluate` without acting, for the leader's look ahead (activities.disruption.trigger), given what
        the previous looks found (`memory`); returns the decision and what this look found. The decision
        is None, with nothing decided or published, while the cluster is settled: it is the state the last
        passes over it found nothing in, and no time-driven change is due (scheduling.disruption.settled).
        `cache`: the leader's watch cache (kube.watch_cache). Once it is synced, a full read takes pods,
        Nodes, NodeClaims, NodePools and EC2NodeClasses from it rather than listing them, and while its
        event count has not moved since the last full read, only what the watches do not see is read
        again (PDBs, DaemonSets, volumes, RuntimeClasses, the catalog), not every pod and node."""
        mark = cache.changes if cache is not None and cache.synced else None
        settlement = memory.settlement if memory is not None else None
        side = None
        if settlement is not None and mark is not None and memory is not None and mark == memory.mark:
            # The watched part of the key is the settled one's: only the side part can have changed.
            side = self.snapshot(inp, watched=False)
            if settlement.holds(StateKey(settlement.key.watched, side_key(side)), side.now):
                self.metrics.disruption_settled_looks.inc()
                return None, memory
        snapshot = self.snapshot(inp, cache=cache) if side is None else with_watched(side, self.kube, cache)
        key = state_key(snapshot)
        if settlement is not None and settlement.holds(key, snapshot.now):
            self.metrics.disruption_settled_looks.inc()
            return None, LookAhead(settlement, mark)
        decided, decision, written = self._evaluate_on(snapshot, inp)
        # A write that failed is retried by the next decision: nothing is settled until it succeeds.
        settled = settle(settlement, key, snapshot, decision) if written else None
        return decided, LookAhead(settled, mark)

    def _evaluate_on(self, snapshot: DisruptionInput, inp: DecideInput) -> tuple[DisruptionRound, Decision, bool]:
        """`evaluate` on a snapshot already read; also returns the decision itself and whether everything
        it published was written."""
        with self.metrics.disruption_evaluation_duration.labels(method="all", consolidation_type="").time():
            decision = decide(snapshot, options=self.options)
        written = self.publish(snapshot, decision)
        command = decision.command
        chosen = command.candidates if command else []
        executable = command is not None and command.method in inp.executable_methods
        self.count(decision)
        decided = DisruptionRound(
            command=command,
            executable=executable,
            rejections=dict(sorted(Counter(rej.code for rej in decision.rejections).items())),
            candidates_seen=len({rej.node for rej in decision.rejections} | {c.node for c in chosen}),
            single_node_skipped=decision.single_node_skipped,
            timed_out=decision.timed_out,
        )
        return decided, decision, written

    def count(self, decision: Decision) -> None:
        """The decision's metrics (see the module docstring)."""
        m = self.metrics
        if decision.timed_out:
            m.consolidation_timeouts.labels(consolidation_type="").inc()
        for reason, count in decision.eligible.items():
            m.disruption_eligible_nodes.labels(reason=disruption_reason(reason)).set(count)
        for move in decision.moves:
            verdict = {"nodepool": move.node_pool, "policy": move.policy}
            m.consolidation_moves.labels(decision=approval(move.approved), **verdict).inc()
            if move.score is not None:
                own = approval(move.score.approved)
                m.consolidation_score.labels(decision=own, **verdict).observe(move.score.score)
        series = {
            (b.node_pool, disruption_reason(lim.reason)): (lim.allowed, b.disrupting)
            for b in decision.budgets
            for lim in b.limits
        }
        with self._lock:
            for (pool, reason), (allowed, disrupting) in series.items():
                m.nodepools_allowed_disruptions.labels(nodepool=pool, reason=reason).set(allowed)
                m.nodepools_nodes_consuming_budgets.labels(nodepool=pool, reason=reason).set(disrupting)
            for gone in self._budget_series - series.keys():
                m.nodepools_allowed_disruptions.remove(*gone)
                m.nodepools_nodes_consuming_budgets.remove(*gone)
            self._budget_series = set(series)

    def publish(self, snapshot: DisruptionInput, decision: Decision) -> bool:
        """Write the Consolidatable conditions that should change and record the events the decision
        calls for (see the module docstring); whether every write succeeded. Never raises for an API
        failure."""
        cluster, now = snapshot.cluster, snapshot.now
        written = True
        pools = {p.name: p for p in cluster.node_pools}
        for change in consolidatable_changes(cluster.node_claims, pools, now)[:MAX_CONDITION_WRITES]:
            owned = ownership.node_claim(change.node_claim, change.uid)
            try:
                ownership.update(self.kube, owned, setting_consolidatable(pools[change.node_pool], now), "status")
            except KubeError as err:
                written = False
                log.warning("Consolidatable of NodeClaim %s not written (the next decision retries): %s",
                            change.node_claim, err,
                            extra={"nodeclaim": change.node_claim, "nodepool": change.node_pool})  # fmt: skip
        counts = nodepool_status.pool_resources(cluster.nodes, [c.to_kube() for c in cluster.node_claims])
        for name in sorted(pools):
            try:
                nodepool_status.write_counts(self.kube, name, counts.get(name, nodepool_status.EMPTY))
            except KubeError as err:
                written = False
                log.warning("status of NodePool %s not written (the next decision retries): %s", name, err)
        claims = node_claims_by_node(cluster.nodes, cluster.node_claims)
        nodes = {str((n.get("metadata") or {}).get("name", "")): n for n in cluster.nodes}
        with self._lock:
            self._noticed = {key: when for key, when in self._noticed.items() if now - when < NOTICE_DEDUPE}
            for notice in notices(decision, claims, pools, now):
                node: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": nodes[notice.node].get("metadata") or {}}
                for involved in (node, claims[notice.node].to_kube()):
                    meta = involved.get("metadata") or {}
                    key = (str(involved.get("kind")), str(meta.get("uid") or meta.get("name")), notice.reason,
                           notice.message)  # fmt: skip
                    if key not in self._noticed:
                        self._noticed[key] = now
                        self.recorder.record(involved, "Normal", notice.reason, notice.message)
        return written
