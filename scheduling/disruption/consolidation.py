"""Consolidation: the disruption methods that delete or replace underutilized nodes. Pure.

Each method takes the pass's state (`PassState`: the consolidatable candidates in disruption-cost order,
the budgets, the simulator, the clock) and returns one command or None, recording on the pass why each
node it tried was not moved. scheduling.disruption.decide runs them after emptiness and drift:

- Multi-node consolidation (`multi_node`): among consolidation candidates sorted by disruption cost (at
  most `Limits.multi_node_candidates`, within the `Underutilized` budgets), binary-search the largest
  prefix that can be deleted, or replaced by one node cheaper than the prefix's total price. A
  replacement whose options include an instance type of the prefix keeps only the options cheaper than
  that existing node (the cheapest such): otherwise keeping it and deleting the others would do as well
  with fewer pods moved (Karpenter's `filterOutSameType`).
- Single-node consolidation (`single_node`): candidates in the same order, one at a time (at most
  `Limits.single_node_candidates` simulations): delete it if its pods fit elsewhere, else replace it with
  one cheaper node. The candidates a pass did not reach are returned (`Decision.single_node_skipped`);
  passed back as `DisruptionInput.single_node_first`, they go first next time, so every candidate is
  evaluated in turn however many there are.
- Split consolidation (`split`; not in Karpenter; drop it from the worker's `disruption_methods` for
  Karpenter's behaviour): for at most `Limits.split_candidates` nodes, the most unused dollars first,
  replace one node by two or more smaller ones when they cost at least 25% less
  (scheduling.disruption.split).

Replacement prices follow Karpenter: only options cheaper than the candidates' total price are kept; a
replacement that could be on-demand or spot is launched as spot (so a shortage of spot does not fall back
to a dearer on-demand node); replacing spot nodes with spot needs the `SpotToSpotConsolidation` feature
gate, and, for a single node, at least 15 cheaper instance types (the replacement launches with the 15
cheapest) so that it is not replaced again at once by the next cheapest.

A NodePool with `consolidationPolicy: Balanced` consolidates as WhenEmptyOrUnderutilized does, but each
consolidation move is scored and made only when its savings are worth the pods it disrupts
(scheduling.disruption.balanced); a rejected move is recorded with the code `ConsolidationRejected`, an
approved one carries its scores (`Command.scores`). Balanced moves are tried in disruption-cost order,
not ranked by score as Karpenter does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from apis import labels as L
from apis.instancetype import InstanceType
from scheduling.disruption import balanced
from scheduling.disruption.candidates import NodeState, candidate_ref, deleting, total_price
from scheduling.disruption.model import Command, DisruptionInput, Method, MoveVerdict, PoolBudget, Reason
from scheduling.disruption.simulate import Simulator, narrowed, option_prices, replacement_capacity_types
from scheduling.disruption.split import SPLIT_MIN_SAVING, best_split, cheapest_per_unit, split_price_floor
from scheduling.types import PlannedNodeClaim

SPOT_TO_SPOT_MIN_TYPES = 15
PRICE_EPSILON = 1e-9  # $/h
SPOT = L.CAPACITY_TYPE_SPOT

Verdict = tuple[Command | None, str, str]  # the command, or None with the rejection's code and why


class PassState(Protocol):
    """What a consolidation method reads and records of one decision pass (scheduling.disruption.decide)."""

    inp: DisruptionInput
    consolidatable: list[NodeState]  # in disruption-cost order
    budgets: dict[str, PoolBudget]
    catalog: dict[str, InstanceType]
    totals: dict[str, balanced.PoolTotals]
    simulator: Simulator
    moves: list[MoveVerdict]
    best_cases_judged: set[str]
    single_node_skipped: list[str]
    timed_out: bool

    def out_of_time(self) -> bool: ...

    def reject(self, state: NodeState, method: Method, code: str, message: str) -> None: ...

    def within_budget(self, states: Sequence[NodeState], reason: Reason, method: Method) -> list[NodeState]: ...


# --- the methods --------------------------------------------------------------------------------------


def multi_node(run: PassState) -> Command | None:
    """The largest prefix of the candidates that one command deletes or replaces with one cheaper node."""
    candidates = quiet_budget(run.budgets, run.consolidatable)[: run.inp.limits.multi_node_candidates]
    if len(candidates) < 2:
        return None
    best: Command | None = None
    low, high = 2, len(candidates)
    while low <= high and not run.out_of_time():
        size = (low + high) // 2
        command, _, _ = consolidate(run, candidates[:size], "MultiNodeConsolidation")
        if command is not None:
            best, low = command, size + 1
        else:
            high = size - 1
    return best


def single_node(run: PassState) -> Command | None:
    """The first candidate (those skipped last pass first) deleted or replaced by one cheaper node."""
    first = {name: index for index, name in enumerate(run.inp.single_node_first)}
    ordered = sorted(run.consolidatable, key=lambda s: first.get(s.name, len(first)))  # stable: cost order
    candidates = run.within_budget(ordered, "Underutilized", "SingleNodeConsolidation")
    limit = run.inp.limits.single_node_candidates
    for index, state in enumerate(candidates):
        if index >= limit or run.out_of_time():
            why = "time budget spent" if run.timed_out else f"at most {limit} candidates are simulated per pass"
            for rest in candidates[index:]:
                run.reject(rest, "SingleNodeConsolidation", "NotEvaluated", f"not evaluated this pass: {why}")
            run.single_node_skipped = [s.name for s in candidates[index:]]
            return None
        if not_worth_trying(run, state, "SingleNodeConsolidation"):
            continue
        command, code, message = consolidate(run, [state], "SingleNodeConsolidation")
        if command is not None:
            return command
        run.reject(state, "SingleNodeConsolidation", code, message)
    return None


def split(run: PassState) -> Command | None:
    """Beyond Karpenter (scheduling.disruption.split): one node, most dollars unused first, replaced by
    several smaller nodes costing at least SPLIT_MIN_SAVING less."""
    candidates = [
        s
        for s in run.consolidatable
        if len(s.reschedulable) > 1 and s.price and run.budgets[s.pool_name or ""].allowed("Underutilized") > 0
    ]
    candidates.sort(key=lambda s: (-(s.price or 0.0) * run.simulator.unused_share(s.name), s.name))
    cluster = run.inp.cluster
    per_unit: dict[str, float] = {}
    if candidates:
        per_unit = cheapest_per_unit(cluster.instance_types, cluster.node_pools)
    for state in candidates[: run.inp.limits.split_candidates]:
        if run.out_of_time():
            return None
        if not_worth_trying(run, state, "SplitConsolidation"):
            continue
        command, code, why = split_one(run, state, per_unit)
        if command is not None:
            return command
        run.reject(state, "SplitConsolidation", code, why)
    return None


def split_one(run: PassState, state: NodeState, per_unit: dict[str, float]) -> Verdict:
    """The node replaced by its cheapest split, if that saves SPLIT_MIN_SAVING and passes its pool."""
    assert state.price is not None
    floor = split_price_floor(state, run.simulator, per_unit)
    if not cheaper(floor, state.price * (1 - SPLIT_MIN_SAVING)):
        # Searching is one solver run per size cap; a split that cannot save enough is not worth it.
        why = (
            f"any split costs at least ${floor:.4f}/h (its pods' requests beyond the other nodes' free "
            f"room at the cheapest price per unit), not {SPLIT_MIN_SAVING:.0%} below {state.ref_price()}"
        )
        return None, "SplitNotCheaper", why
    found, why = best_split(
        state,
        run.simulator,
        run.inp.cluster.instance_types,
        run.catalog,
        run.inp.spot_to_spot_consolidation,
        run.out_of_time,
    )
    if found is None:
        return None, "NoSplit", why
    if not cheaper(found.price, state.price * (1 - SPLIT_MIN_SAVING)):
        saving = 1 - found.price / state.price
        why = (
            f"the cheapest split, {found.describe()}, saves {saving:.0%} of {state.ref_price()}; a split "
            f"needs at least {SPLIT_MIN_SAVING:.0%}"
        )
        return None, "SplitNotCheaper", why
    command = Command(
        method="SplitConsolidation",
        reason="Underutilized",
        action="Replace",
        candidates=[candidate_ref(state)],
        replacements=found.replacements,
        price=state.price,
        replacement_price=found.price,
        message=f"split {state.name} ({state.ref_price()}) into {found.describe()}",
    )
    return judge(run, command, [state])


def quiet_budget(budgets: Mapping[str, PoolBudget], states: list[NodeState]) -> list[NodeState]:
    """The pass's `within_budget` without recording rejections (multi-node failing is not a per-node fact)."""
    left = {name: budget.allowed("Underutilized") for name, budget in budgets.items()}
    kept = []
    for state in states:
        pool = state.pool_name or ""
        if left.get(pool, 0) > 0:
            left[pool] -= 1
            kept.append(state)
    return kept


# --- one consolidation --------------------------------------------------------------------------------


def consolidate(run: PassState, states: Sequence[NodeState], method: Method) -> Verdict:
    """Delete or replace these nodes, or (None, code, why not); scored when a pool is Balanced."""
    command, code, message = unscored(run, states, method)
    return (command, code, message) if command is None else judge(run, command, states)


def judge(run: PassState, command: Command, states: Sequence[NodeState]) -> Verdict:
    """`balanced.scored`, its moves kept for the decision."""
    judged = balanced.scored(command, states, run.totals)
    run.moves.extend(judged.moves)
    return judged.command, judged.code, judged.why


def not_worth_trying(run: PassState, state: NodeState, method: Method) -> bool:
    """Whether no move of the node can pass its Balanced pool (balanced.hopeless); such a node is
    rejected without a simulation, and that deletion's verdict kept (once: each method asks)."""
    why, moves = balanced.hopeless(state, run.totals)
    if why:
        run.reject(state, method, balanced.CONSOLIDATION_REJECTED, why)
        if state.name not in run.best_cases_judged:
            run.best_cases_judged.add(state.name)
            run.moves.extend(moves)
    return bool(why)


def unscored(run: PassState, states: Sequence[NodeState], method: Method) -> Verdict:
    """Delete or replace these nodes, whatever their pools' policy, or (None, code, why not)."""
    hopeless = run.simulator.hopeless(states)
    if hopeless:
        return None, "TooManyReplacements", f"more than one new node would be needed: {hopeless}"
    plan = run.simulator.run(states)
    if plan.unschedulable:
        first = plan.unschedulable[0]
        return None, "Unschedulable", f"pod {first.pod} would fit nowhere else: {first.reason}"
    if not plan.node_claims:
        message = f"delete {', '.join(s.name for s in states)}: their pods fit on other nodes"
        return deleting(method, "Underutilized", states, message), "", ""
    total = total_price(states)
    if len(plan.node_claims) > 1:
        return None, "TooManyReplacements", f"its pods need {len(plan.node_claims)} new nodes; at most 1 replaces"
    if total is None:
        return None, "UnknownPrice", "the price of the current node(s) is unknown: cannot judge a replacement"
    return replace(run, states, plan.node_claims[0], total, method)


def replace(
    run: PassState, states: Sequence[NodeState], claim: PlannedNodeClaim, total: float, method: Method
) -> Verdict:
    """Replace the nodes (costing `total` per hour) with the planned claim, narrowed to cheaper options
    under Karpenter's capacity-type rules, or (None, code, why not)."""
    capacity_types, why_not = replacement_capacity_types(claim, states, run.inp.spot_to_spot_consolidation)
    if not capacity_types:
        return None, "SpotToSpotDisabled", why_not
    kinds = "/".join(sorted(capacity_types))
    options = option_prices(claim, run.catalog, capacity_types)
    if not options:
        return None, "NoReplacement", f"no {kinds} offering for the replacement"
    kept, code, why = cheaper_options(options, states, total, capacity_types, method)
    if not kept:
        return None, code, why
    names = ", ".join(s.name for s in states)
    command = Command(
        method=method,
        reason="Underutilized",
        action="Replace",
        candidates=[candidate_ref(s) for s in states],
        replacements=[narrowed(claim, kept, capacity_types)],
        price=total,
        replacement_price=kept[0][0],
        message=f"replace {names} (${total:.4f}/h) with one {kinds} node from {kept[0][1]} at ${kept[0][0]:.4f}/h",
    )
    return command, "", ""


def cheaper_options(
    options: list[tuple[float, str]],
    states: Sequence[NodeState],
    total: float,
    capacity_types: set[str],
    method: Method,
) -> tuple[list[tuple[float, str]], str, str]:
    """The (price, instance type) options, cheapest first, a replacement of these nodes may launch with,
    or ([], code, why not): cheaper than `total`, at least 15 of them for one spot node replaced by spot,
    and cheaper than any node of the same type for a multi-node replacement."""
    kept = [o for o in options if cheaper(o[0], total)]
    if not kept:
        price, name = options[0]
        return (
            [],
            "NotCheaper",
            f"no cheaper replacement: cheapest option {name} at ${price:.4f}/h vs current ${total:.4f}/h",
        )
    all_spot = all(s.capacity_type == SPOT for s in states)
    if all_spot and capacity_types == {SPOT} and method == "SingleNodeConsolidation":
        if len(kept) < SPOT_TO_SPOT_MIN_TYPES:
            why = (
                f"spot-to-spot consolidation needs at least {SPOT_TO_SPOT_MIN_TYPES} cheaper instance types; "
                f"{len(kept)} are cheaper than ${total:.4f}/h"
            )
            return [], "SpotToSpotFlexibility", why
        kept = kept[:SPOT_TO_SPOT_MIN_TYPES]
    if method == "MultiNodeConsolidation":
        same_type = filter_out_same_type(kept, states)
        if not same_type:
            price, name = kept[0]
            why = (
                f"the replacement is no cheaper than one of the nodes it replaces: {name} at ${price:.4f}/h; "
                "deleting the others would do"
            )
            return [], "SameTypeNotCheaper", why
        kept = same_type
    return kept, "", ""


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
    return [(price, name) for price, name in options if cheaper(price, ceiling)]


def cheaper(price: float, than: float) -> bool:
    """Strictly cheaper, beyond float noise (a sum of 11 prices may exceed the same total by 1e-16)."""
    return price < than - PRICE_EPSILON
