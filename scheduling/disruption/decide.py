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
3. Multi-node consolidation: among consolidation candidates sorted by disruption cost (at most
   `Limits.multi_node_candidates`, within the `Underutilized` budgets), binary-search the largest prefix
   that can be deleted, or replaced by one node cheaper than the prefix's total price. A replacement
   whose options include an instance type of the prefix keeps only the options cheaper than that
   existing node (the cheapest such): otherwise keeping it and deleting the others would do as well
   with fewer pods moved (Karpenter's `filterOutSameType`).
4. Single-node consolidation: candidates in the same order, one at a time (at most
   `Limits.single_node_candidates` simulations): delete it if its pods fit elsewhere, else replace it with
   one cheaper node. The candidates a pass did not reach are returned (`Decision.single_node_skipped`);
   passed back as `DisruptionInput.single_node_first`, they go first next time, so every candidate is
   evaluated in turn however many there are.
5. Split consolidation (not in Karpenter; drop it from the worker's `disruption_methods` for Karpenter's
   behaviour): for at most `Limits.split_candidates` nodes, the most unused dollars first, replace one node
   by two or more smaller ones when they cost at least 25% less (scheduling.disruption.split).

Replacement prices follow Karpenter: only options cheaper than the candidates' total price are kept; a
replacement that could be on-demand or spot is launched as spot (so a shortage of spot does not fall back
to a dearer on-demand node); replacing spot nodes with spot needs the `SpotToSpotConsolidation` feature
gate, and, for a single node, at least 15 cheaper instance types (the replacement launches with the 15
cheapest) so that it is not replaced again at once by the next cheapest.

A NodePool with `consolidationPolicy: Balanced` consolidates as WhenEmptyOrUnderutilized does, but each
consolidation move (methods 3 to 5) is scored and made only when its savings are worth the pods it
disrupts (scheduling.disruption.balanced); a rejected move is recorded with the code
`ConsolidationRejected`, an approved one carries its scores (`Command.scores`).

In the simulations no pod moves to a node not ready to take it (scheduling.disruption.simulate).

Not (yet) done as Karpenter does: static NodePools' drift (StaticDrift) is left to a later change;
Balanced moves are tried in disruption-cost order, not ranked by score.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from apis import labels as L
from apis.meta import get_condition
from scheduling.catalog import OptionCache
from scheduling.disruption import balanced
from scheduling.disruption.budgets import pool_budget
from scheduling.disruption.candidates import (
    NodeState,
    PdbIndex,
    build_states,
    consolidation_rejection,
    node_rejection,
    pod_rejection,
)
from scheduling.disruption.model import (
    METHOD_ORDER,
    CandidateRef,
    Command,
    Decision,
    DisruptionInput,
    Method,
    MoveVerdict,
    PoolBudget,
    Reason,
    Rejection,
)
from scheduling.disruption.simulate import Simulator, narrowed, option_prices, replacement_capacity_types
from scheduling.disruption.split import (
    SPLIT_MIN_SAVING,
    best_split,
    cheapest_per_unit,
    split_price_floor,
)
from scheduling.provisionable import pod_key
from scheduling.types import PlannedNodeClaim

SPOT_TO_SPOT_MIN_TYPES = 15
PRICE_EPSILON = 1e-9  # $/h
SPOT, ON_DEMAND = L.CAPACITY_TYPE_SPOT, L.CAPACITY_TYPE_ON_DEMAND


def candidate_ref(state: NodeState) -> CandidateRef:
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


def _total_price(states: Sequence[NodeState]) -> float | None:
    prices = [s.price for s in states]
    return None if any(p is None for p in prices) else sum(p for p in prices if p is not None)


def _deleting(method: Method, reason: Reason, states: Sequence[NodeState], message: str) -> Command:
    """The command deleting these nodes (no replacement), priced at what they cost now."""
    return Command(
        method=method,
        reason=reason,
        action="Delete",
        candidates=[candidate_ref(s) for s in states],
        price=_total_price(states),
        message=message,
    )


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

    # --- the methods ----------------------------------------------------------------------------------

    def emptiness(self) -> Command | None:
        empty = self.within_budget([s for s in self.consolidatable if s.empty], "Empty", "Emptiness")
        if not empty:
            return None
        return _deleting("Emptiness", "Empty", empty, f"delete {len(empty)} empty node(s)")

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
            return _deleting("Drift", "Drifted", empty, f"delete {len(empty)} empty drifted node(s)")
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

    def multi_node(self) -> Command | None:
        candidates = self._quiet_budget(self.consolidatable)[: self.inp.limits.multi_node_candidates]
        if len(candidates) < 2:
            return None
        best: Command | None = None
        low, high = 2, len(candidates)
        while low <= high and not self.out_of_time():
            size = (low + high) // 2
            command, _, _ = self.consolidate(candidates[:size], "MultiNodeConsolidation")
            if command is not None:
                best, low = command, size + 1
            else:
                high = size - 1
        return best

    def single_node(self) -> Command | None:
        first = {name: index for index, name in enumerate(self.inp.single_node_first)}
        ordered = sorted(self.consolidatable, key=lambda s: first.get(s.name, len(first)))  # stable: cost order
        candidates = self.within_budget(ordered, "Underutilized", "SingleNodeConsolidation")
        limit = self.inp.limits.single_node_candidates
        for index, state in enumerate(candidates):
            if index >= limit or self.out_of_time():
                why = "time budget spent" if self.timed_out else f"at most {limit} candidates are simulated per pass"
                for rest in candidates[index:]:
                    self.reject(rest, "SingleNodeConsolidation", "NotEvaluated", f"not evaluated this pass: {why}")
                self.single_node_skipped = [s.name for s in candidates[index:]]
                return None
            if self.not_worth_trying(state, "SingleNodeConsolidation"):
                continue
            command, code, message = self.consolidate([state], "SingleNodeConsolidation")
            if command is not None:
                return command
            self.reject(state, "SingleNodeConsolidation", code, message)
        return None

    def split(self) -> Command | None:
        """Beyond Karpenter (scheduling.disruption.split): one node, most dollars unused first, replaced by
        several smaller nodes costing at least SPLIT_MIN_SAVING less."""
        candidates = [
            s
            for s in self.consolidatable
            if len(s.reschedulable) > 1 and s.price and self.budgets[s.pool_name or ""].allowed("Underutilized") > 0
        ]
        candidates.sort(key=lambda s: (-(s.price or 0.0) * self.simulator.unused_share(s.name), s.name))
        cluster = self.inp.cluster
        per_unit: dict[str, float] = {}
        if candidates:
            per_unit = cheapest_per_unit(cluster.instance_types, cluster.node_pools)
        for state in candidates[: self.inp.limits.split_candidates]:
            if self.out_of_time():
                return None
            if self.not_worth_trying(state, "SplitConsolidation"):
                continue
            assert state.price is not None
            floor = split_price_floor(state, self.simulator, per_unit)
            if not _cheaper(floor, state.price * (1 - SPLIT_MIN_SAVING)):
                # Searching is one solver run per size cap; a split that cannot save enough is not worth it.
                why = (
                    f"any split costs at least ${floor:.4f}/h (its pods' requests beyond the other nodes' free "
                    f"room at the cheapest price per unit), not {SPLIT_MIN_SAVING:.0%} below {state.ref_price()}"
                )
                self.reject(state, "SplitConsolidation", "SplitNotCheaper", why)
                continue
            found, why = best_split(
                state,
                self.simulator,
                self.inp.cluster.instance_types,
                self.catalog,
                self.inp.spot_to_spot_consolidation,
                self.out_of_time,
            )
            if found is None:
                self.reject(state, "SplitConsolidation", "NoSplit", why)
                continue
            if not _cheaper(found.price, state.price * (1 - SPLIT_MIN_SAVING)):
                saving = 1 - found.price / state.price
                why = (
                    f"the cheapest split, {found.describe()}, saves {saving:.0%} of {state.ref_price()}; a split "
                    f"needs at least {SPLIT_MIN_SAVING:.0%}"
                )
                self.reject(state, "SplitConsolidation", "SplitNotCheaper", why)
                continue
            command, code, why = self.judge(
                Command(
                    method="SplitConsolidation",
                    reason="Underutilized",
                    action="Replace",
                    candidates=[candidate_ref(state)],
                    replacements=found.replacements,
                    price=state.price,
                    replacement_price=found.price,
                    message=f"split {state.name} ({state.ref_price()}) into {found.describe()}",
                ),
                [state],
            )
            if command is not None:
                return command
            self.reject(state, "SplitConsolidation", code, why)
        return None

    def _quiet_budget(self, states: list[NodeState]) -> list[NodeState]:
        """`within_budget` without recording rejections (multi-node failing is not a per-node fact)."""
        left = {name: budget.allowed("Underutilized") for name, budget in self.budgets.items()}
        kept = []
        for state in states:
            pool = state.pool_name or ""
            if left.get(pool, 0) > 0:
                left[pool] -= 1
                kept.append(state)
        return kept

    # --- one consolidation ----------------------------------------------------------------------------

    def consolidate(self, states: Sequence[NodeState], method: Method) -> tuple[Command | None, str, str]:
        """Delete or replace these nodes, or (None, code, why not); scored when a pool is Balanced."""
        command, code, message = self.unscored(states, method)
        return (command, code, message) if command is None else self.judge(command, states)

    def judge(self, command: Command, states: Sequence[NodeState]) -> tuple[Command | None, str, str]:
        """`balanced.scored`, its moves kept for the decision."""
        judged = balanced.scored(command, states, self.totals)
        self.moves.extend(judged.moves)
        return judged.command, judged.code, judged.why

    def not_worth_trying(self, state: NodeState, method: Method) -> bool:
        """Whether no move of the node can pass its Balanced pool (balanced.hopeless); such a node is
        rejected without a simulation, and that deletion's verdict kept (once: each method asks)."""
        why, moves = balanced.hopeless(state, self.totals)
        if why:
            self.reject(state, method, balanced.CONSOLIDATION_REJECTED, why)
            if state.name not in self.best_cases_judged:
                self.best_cases_judged.add(state.name)
                self.moves.extend(moves)
        return bool(why)

    def unscored(self, states: Sequence[NodeState], method: Method) -> tuple[Command | None, str, str]:
        """Delete or replace these nodes, whatever their pools' policy, or (None, code, why not)."""
        hopeless = self.simulator.hopeless(states)
        if hopeless:
            return None, "TooManyReplacements", f"more than one new node would be needed: {hopeless}"
        plan = self.simulator.run(states)
        if plan.unschedulable:
            first = plan.unschedulable[0]
            return None, "Unschedulable", f"pod {first.pod} would fit nowhere else: {first.reason}"
        if not plan.node_claims:
            message = f"delete {', '.join(s.name for s in states)}: their pods fit on other nodes"
            return _deleting(method, "Underutilized", states, message), "", ""
        total = _total_price(states)
        if len(plan.node_claims) > 1:
            return None, "TooManyReplacements", f"its pods need {len(plan.node_claims)} new nodes; at most 1 replaces"
        if total is None:
            return None, "UnknownPrice", "the price of the current node(s) is unknown: cannot judge a replacement"
        return self.replace(states, plan.node_claims[0], total, method)

    def replace(
        self, states: Sequence[NodeState], claim: PlannedNodeClaim, total: float, method: Method
    ) -> tuple[Command | None, str, str]:
        """Replace the nodes (costing `total` per hour) with the planned claim, narrowed to cheaper options
        under Karpenter's capacity-type rules, or (None, code, why not)."""
        capacity_types, why_not = replacement_capacity_types(claim, states, self.inp.spot_to_spot_consolidation)
        if not capacity_types:
            return None, "SpotToSpotDisabled", why_not
        all_spot = all(s.capacity_type == SPOT for s in states)
        kinds = "/".join(sorted(capacity_types))
        options = option_prices(claim, self.catalog, capacity_types)
        if not options:
            return None, "NoReplacement", f"no {kinds} offering for the replacement"
        cheaper = [o for o in options if _cheaper(o[0], total)]
        if not cheaper:
            price, name = options[0]
            why = f"no cheaper replacement: cheapest option {name} at ${price:.4f}/h vs current ${total:.4f}/h"
            return None, "NotCheaper", why
        if all_spot and capacity_types == {SPOT} and method == "SingleNodeConsolidation":
            if len(cheaper) < SPOT_TO_SPOT_MIN_TYPES:
                why = (
                    f"spot-to-spot consolidation needs at least {SPOT_TO_SPOT_MIN_TYPES} cheaper instance types; "
                    f"{len(cheaper)} are cheaper than ${total:.4f}/h"
                )
                return None, "SpotToSpotFlexibility", why
            cheaper = cheaper[:SPOT_TO_SPOT_MIN_TYPES]
        if method == "MultiNodeConsolidation":
            kept = filter_out_same_type(cheaper, states)
            if not kept:
                price, name = cheaper[0]
                why = (
                    f"the replacement is no cheaper than one of the nodes it replaces: {name} at ${price:.4f}/h; "
                    "deleting the others would do"
                )
                return None, "SameTypeNotCheaper", why
            cheaper = kept
        names = ", ".join(s.name for s in states)
        command = Command(
            method=method,
            reason="Underutilized",
            action="Replace",
            candidates=[candidate_ref(s) for s in states],
            replacements=[narrowed(claim, cheaper, capacity_types)],
            price=total,
            replacement_price=cheaper[0][0],
            message=f"replace {names} (${total:.4f}/h) with one {kinds} node from {cheaper[0][1]} at "
            f"${cheaper[0][0]:.4f}/h",
        )
        return command, "", ""


def filter_out_same_type(options: list[tuple[float, str]], states: Sequence[NodeState]) -> list[tuple[float, str]]:
    """The (price, instance type) options of a multi-node replacement that are cheaper than every
    candidate whose instance type is itself among the options, at that candidate's own price.

    Merging [t3a.2xlarge, t3a.2xlarge, t3a.small] into one of {t3a.small, t3a.xlarge, ...} is just
    deleting the two t3a.2xlarge and keeping the t3a.small, with fewer pods moved; so only options
    cheaper than the t3a.small stay (none here; t3a.nano if it were an option). A candidate of unknown
    price counts as free, which rules every option out, as in Karpenter."""
    existing: dict[str, float] = {}
    for state in states:
        price = state.price if state.price is not None else 0.0
        existing[state.instance_type] = min(price, existing.get(state.instance_type, price))
    ceiling = min((existing[name] for _, name in options if name in existing), default=None)
    if ceiling is None:
        return list(options)
    return [(price, name) for price, name in options if _cheaper(price, ceiling)]


def _cheaper(price: float, than: float) -> bool:
    """Strictly cheaper, beyond float noise (a sum of 11 prices may exceed the same total by 1e-16)."""
    return price < than - PRICE_EPSILON


def _drifted_at(state: NodeState) -> str:
    condition = get_condition(state.claim.status.conditions, "Drifted") if state.claim else None
    return condition.last_transition_time if condition else ""


METHODS: dict[Method, Callable[[_Pass], Command | None]] = {
    "Drift": _Pass.drift,
    "Emptiness": _Pass.emptiness,
    "MultiNodeConsolidation": _Pass.multi_node,
    "SingleNodeConsolidation": _Pass.single_node,
    "SplitConsolidation": _Pass.split,
}


def decide(
    inp: DisruptionInput, clock: Callable[[], float] = time.perf_counter, options: OptionCache | None = None
) -> Decision:
    """The one disruption command to execute now, if any, with every rejected node's reason and the
    pools' budgets. Deterministic for a given input unless the `Limits.seconds` budget runs out
    (`clock` measures it; the decision then says `timedOut`). `options`: instance-type options built by
    earlier passes (scheduling.catalog.OptionCache); the decision is the same with or without it."""
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
