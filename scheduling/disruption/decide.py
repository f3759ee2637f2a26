"""The disruption decision: one command per pass, from the first method that finds one. Pure.

Methods run in the order of Karpenter's current disruption controller (emptiness, then drift, then
multi-node and single-node consolidation; the first v1 releases tried drift before emptiness; deleting an
empty node moves no pod, so it goes first), then one method of nodeflow's own, and the first that yields
a command ends the pass:

1. Emptiness: delete empty consolidatable nodes (no reschedulable pods), as many as the pools' `Empty`
   budgets allow, in one command.
2. Drift: replace a node whose NodeClaim has `Drifted=True`. Empty drifted nodes go first, all at once;
   otherwise the earliest drifted node whose pods all schedule is replaced by whatever new nodes they
   need (drift does not ask for a cheaper replacement). With `terminationGracePeriod` set on the
   NodeClaim, pods with do-not-disrupt or a blocking PDB do not stop drift (the drain waits for them
   until the grace period ends).
3. Multi-node consolidation, 4. single-node consolidation, 5. split consolidation (not in Karpenter;
   drop it from the worker's `disruption_methods` for Karpenter's behaviour): all three in
   scheduling.disruption.consolidation, with the replacement price rules and the scoring of a Balanced
   NodePool's moves.

In the simulations no pod moves to a node not ready to take it (scheduling.disruption.simulate).

Not (yet) done as Karpenter does: static NodePools' drift (StaticDrift) is left to a later change.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from apis.meta import get_condition
from scheduling.disruption import balanced, consolidation
from scheduling.disruption.budgets import pool_budget
from scheduling.disruption.candidates import (
    NodeState,
    PdbIndex,
    build_states,
    candidate_ref,
    consolidation_rejection,
    deleting,
    node_rejection,
    pod_rejection,
)
from scheduling.disruption.consolidation import filter_out_same_type as filter_out_same_type  # re-exported
from scheduling.disruption.model import (
    METHOD_ORDER,
    Command,
    Decision,
    DisruptionInput,
    Method,
    MoveVerdict,
    PoolBudget,
    Reason,
    Rejection,
)
from scheduling.disruption.simulate import Simulator
from scheduling.provisioning.catalog import OptionCache


class _Pass:
    """One decision over one snapshot: candidates, budgets, rejections, the simulator and the clock."""

    def __init__(self, inp: DisruptionInput, clock: Callable[[], float], options: OptionCache | None) -> None:
        self.inp = inp
        self.now = inp.now
        self.clock = clock
        self.deadline = clock() + inp.limits.seconds
        self.timed_out = False
        self.single_node_skipped: list[str] = []
        cluster = inp.cluster
        self.states = build_states(
            cluster.nodes, cluster.node_claims, cluster.node_pools, cluster.bound_pods, cluster.instance_types, self.now
        )
        self.catalog = {it.name: it for it in cluster.instance_types}
        self.totals = balanced.pool_totals(self.states)
        self.budgets: dict[str, PoolBudget] = {
            p.name: pool_budget(p, cluster.nodes, self.now) for p in sorted(cluster.node_pools, key=lambda p: p.name)
        }
        self.rejections: list[Rejection] = []
        self.moves: list[MoveVerdict] = []
        self.best_cases_judged: set[str] = set()
        self.simulator = Simulator(cluster, options)
        pdbs = PdbIndex(inp.pod_disruption_budgets)
        self.eligible: list[NodeState] = []
        self.blocked: dict[str, Rejection] = {}
        for state in self.states:
            rejection = node_rejection(state)
            if rejection is not None:
                self.rejections.append(rejection)
                continue
            self.eligible.append(state)
            blocker = pod_rejection(state, pdbs, self.now)
            if blocker is not None:
                self.blocked[state.name] = blocker
                self.rejections.append(blocker)
        self.consolidatable: list[NodeState] = []
        for state in self.eligible:
            if state.name in self.blocked:
                continue
            rejection = consolidation_rejection(state, self.now, empty_only=state.empty)
            if rejection is None:
                self.consolidatable.append(state)
            else:
                rejection.method = "Emptiness" if state.empty else "Consolidation"
                self.rejections.append(rejection)
        self.consolidatable.sort(key=lambda s: (s.cost, s.name))

    def out_of_time(self) -> bool:
        if self.clock() > self.deadline:
            self.timed_out = True
        return self.timed_out

    def reject(self, state: NodeState, method: Method, code: str, message: str) -> None:
        self.rejections.append(
            Rejection(node=state.name, node_pool=state.pool_name, method=method, code=code, message=message)
        )

    def within_budget(self, states: Sequence[NodeState], reason: Reason, method: Method) -> list[NodeState]:
        """The states, in order, that their pools' budgets for `reason` allow; the rest are rejected."""
        left = {name: budget.allowed(reason) for name, budget in self.budgets.items()}
        kept = []
        for state in states:
            pool = state.pool_name or ""
            if left.get(pool, 0) > 0:
                left[pool] -= 1
                kept.append(state)
            else:
                limit = self.budgets[pool].limit(reason)
                self.reject(state, method, "Budget", limit.describe(pool))
        return kept

    # --- emptiness and drift (consolidation: scheduling.disruption.consolidation) ---------------------

    def emptiness(self) -> Command | None:
        empty = self.within_budget([s for s in self.consolidatable if s.empty], "Empty", "Emptiness")
        if not empty:
            return None
        return deleting("Emptiness", "Empty", empty, f"delete {len(empty)} empty node(s)")

    def drift(self) -> Command | None:
        drifted = []
        for state in self.eligible:
            if not state.drifted:
                continue
            assert state.claim is not None
            if state.name in self.blocked and state.claim.spec.termination_grace_period is None:
                continue  # the pod blocker is recorded already
            drifted.append(state)
        since = {s.name: _drifted_at(s) for s in drifted}
        drifted.sort(key=lambda s: (not s.empty, since[s.name], s.name))
        drifted = self.within_budget(drifted, "Drifted", "Drift")
        empty = [s for s in drifted if s.empty]
        if empty:
            return deleting("Drift", "Drifted", empty, f"delete {len(empty)} empty drifted node(s)")
        for index, state in enumerate(drifted):
            if self.out_of_time():
                for rest in drifted[index:]:
                    self.reject(rest, "Drift", "NotEvaluated", "not evaluated this pass: time budget spent")
                return None
            plan = self.simulator.run([state])
            if plan.unschedulable:
                first = plan.unschedulable[0]
                self.reject(state, "Drift", "Unschedulable", f"pod {first.pod} would not schedule: {first.reason}")
                continue
            prices = [c.price for c in plan.node_claims]
            message = (
                f"replace drifted node {state.name} with {len(plan.node_claims)} new node(s)"
                if plan.node_claims
                else f"delete drifted node {state.name}: its pods fit on other nodes"
            )
            return Command(
                method="Drift",
                reason="Drifted",
                action="Replace" if plan.node_claims else "Delete",
                candidates=[candidate_ref(state)],
                replacements=plan.node_claims,
                price=state.price,
                replacement_price=sum(prices) if prices else None,
                message=message,
            )
        return None


def _drifted_at(state: NodeState) -> str:
    condition = get_condition(state.claim.status.conditions, "Drifted") if state.claim else None
    return condition.last_transition_time if condition else ""


METHODS: dict[Method, Callable[[_Pass], Command | None]] = {
    "Drift": _Pass.drift,
    "Emptiness": _Pass.emptiness,
    "MultiNodeConsolidation": consolidation.multi_node,
    "SingleNodeConsolidation": consolidation.single_node,
    "SplitConsolidation": consolidation.split,
}


def decide(
    inp: DisruptionInput, clock: Callable[[], float] = time.perf_counter, options: OptionCache | None = None
) -> Decision:
    """The one disruption command to execute now, if any, with every rejected node's reason and the
    pools' budgets. Deterministic for a given input unless the `Limits.seconds` budget runs out
    (`clock` measures it; the decision then says `timedOut`). `options`: instance-type options built by
    earlier passes (scheduling.provisioning.catalog.OptionCache); the decision is the same with or without it."""
    run = _Pass(inp, clock, options)
    command = None
    for name in METHOD_ORDER:
        command = METHODS[name](run)
        if command is not None:
            break
    return Decision(
        command=command,
        rejections=run.rejections,
        budgets=list(run.budgets.values()),
        simulations=run.simulator.runs,
        timed_out=run.timed_out,
        single_node_skipped=run.single_node_skipped,
        eligible={
            "Drifted": sum(1 for s in run.eligible if s.drifted),
            "Empty": sum(1 for s in run.consolidatable if s.empty),
            "Underutilized": len(run.consolidatable),
        },
        moves=run.moves,
    )
