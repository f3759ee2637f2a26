"""The solver: place pending pods on existing nodes, in-flight claims, then new NodeClaims.

Pods are scheduled by equivalence class (identical pods), largest first (cpu, then memory). Classes with
topology terms go first, one pod at a time, since every placement changes the counts. Classes without
go next, in bulk (as many pods as fit on a target at once) and interleaved in rounds so nodes fill with
a mix of shapes. Pods that fit nowhere are retried while retrying makes progress.

For each pod the variants are tried strictest first (see `scheduling.provisioning.pods`); for each variant: the
topology pins (a zone, a capacity type... chosen from the counts), then targets in order (existing
nodes, in-flight claims, new claims already planned), then a new claim from the first NodePool, by
weight, that takes it. Cursors remember, per class, variant and pin, the targets that can never take
another such pod, so each class walks the target list about once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.labels import HOSTNAME
from apis.values.quantity import add
from scheduling.constraints.requirements import Requirements
from scheduling.constraints.resources import ports_conflict
from scheduling.constraints.taints import untolerated
from scheduling.constraints.topology import AFFINITY, Term, Topology, namespace_labels
from scheduling.provisioning.catalog import Option, OptionCache
from scheduling.provisioning.domains import ClassState, Domains
from scheduling.provisioning.explain import limits_reason, limits_remaining, no_room_reason, no_type_reason
from scheduling.provisioning.limits import Trimmable, kept_counts
from scheduling.provisioning.output import INF, planned_claim
from scheduling.provisioning.packing import IntArray
from scheduling.provisioning.pods import Variant, group_pods
from scheduling.provisioning.pools import Pool, build_pools, pool_problems
from scheduling.provisioning.state import (
    bound_anti_terms,
    cluster_targets,
    in_flight_targets,
    runtime_overheads,
    volume_resolver,
)
from scheduling.provisioning.targets import Claim, NodeTarget, Target, fit_count
from scheduling.types import ExistingNodePlacement, Plan, SchedulingInput, UnschedulablePod

INTERLEAVE_ROUNDS = 32


class Solver:
    """One scheduling run over one snapshot (use `solve`)."""

    def __init__(self, inp: SchedulingInput, options: OptionCache | None = None) -> None:
        self.topology = Topology()
        self.targets, existing_capacity, bound = cluster_targets(inp)
        self.pools = build_pools(
            inp.node_pools, inp.node_classes, inp.instance_types, inp.daemonsets, existing_capacity, options
        )
        self.ready_pools = [p for p in self.pools if not p.problem]
        self.relax_min_values = inp.min_values_policy == "BestEffort"
        self.pool_problems = pool_problems(self.pools)
        self.targets.extend(in_flight_targets(inp, self.pools, {t.name for t in self.targets}))
        self.all: list[Target] = list(self.targets)
        self.claims: list[Claim] = []
        ns_labels = namespace_labels(inp.namespaces)
        bound_terms = [(target, pod, bound_anti_terms(pod, ns_labels)) for target, pod in bound]
        bound_keys = frozenset(k for _, _, terms in bound_terms for t in terms for k in t.selector.labels)
        classes = group_pods(
            inp.pods,
            runtime_overheads(inp.runtime_classes),
            volume_resolver(inp),
            bound_keys,
            ns_labels,
            ignore_preferences=inp.preference_policy == "Ignore",
        )
        for cls in classes:
            for term in (*(t for v in cls.parsed.variants for t in v.terms), *cls.parsed.owned_anti):
                self.topology.group(term)
        self._record_bound(bound_terms)
        self.states = [ClassState(cls, self.topology) for cls in classes]
        self.domains = Domains(self.topology, self.ready_pools, self.targets, self._compatible)
        self.cursors: dict[tuple[int, int, Requirements], int] = {}
        self.merge_cache: dict[tuple[int, Requirements, Requirements], tuple[Requirements | None, str]] = {}
        self.compat_cache: dict[tuple[int, Requirements], list[Option]] = {}
        self.mask_cache: dict[tuple[int, Requirements], npt.NDArray[np.bool_]] = {}
        self.vector_cache: dict[tuple[int, int], tuple[IntArray, list[tuple[int, int]]] | None] = {}
        self.price_cache: dict[tuple[int, Requirements], list[float]] = {}
        self.unschedulable: list[UnschedulablePod] = []
        self.failed: list[tuple[ClassState, list[str], str]] = []

    def _record_bound(self, bound_terms: list[tuple[NodeTarget, Mapping[str, Any], list[Term]]]) -> None:
        """Running pods count in every group they match, and own their required anti-affinity terms."""
        for _, _, terms in bound_terms:
            for term in terms:
                self.topology.group(term)
        for target, pod, terms in bound_terms:
            meta = pod.get("metadata") or {}
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            matching = self.topology.matching_groups(meta.get("namespace") or "default", labels)
            Topology.record(matching, [self.topology.group(t) for t in terms], target.domain)

    # --- the main loop ------------------------------------------------------------------------------

    def solve(self) -> Plan:
        for state in self.states:
            if state.cls.parsed.error:
                self.unschedulable.extend(
                    UnschedulablePod(pod=p, reason=state.cls.parsed.error) for p in state.cls.pods
                )
        valid = [s for s in self.states if not s.cls.parsed.error]
        for state in valid:
            if not state.bulk:
                self._schedule_pods(state, state.cls.pods)
        self._schedule_interleaved([s for s in valid if s.bulk])
        self._retry_failed()
        self._trim_to_limits()
        return self._plan()

    def _schedule_pods(self, state: ClassState, pods: list[str]) -> None:
        """Place the pods (in bulk when the class allows); the first that fits nowhere fails with the rest,
        since identical pods meet an unchanged cluster."""
        position = 0
        while position < len(pods):
            want = len(pods) - position if state.bulk else 1
            placed, reason = self._place(state, pods[position : position + want])
            if placed == 0:
                self.failed.append((state, pods[position:], reason))
                return
            position += placed

    def _schedule_interleaved(self, states: list[ClassState]) -> None:
        """Classes without topology terms, in rounds: each round places a slice of every class (largest
        pods first), so nodes fill with a mix whose cpu:memory ratio is the workload's rather than one
        class's, and the cheapest instance type for the mix wastes less."""
        positions = {id(s): 0 for s in states}
        chunks = {id(s): max(1, -(-len(s.cls.pods) // INTERLEAVE_ROUNDS)) for s in states}
        active = list(states)
        while active:
            still = []
            for state in active:
                pods = state.cls.pods
                start = positions[id(state)]
                end = min(len(pods), start + chunks[id(state)])
                while start < end:
                    placed, reason = self._place(state, pods[start:end])
                    if placed == 0:
                        self.failed.append((state, pods[start:], reason))
                        start = len(pods)
                        break
                    start += placed
                positions[id(state)] = start
                if start < len(pods):
                    still.append(state)
            active = still

    def _retry_failed(self) -> None:
        """Pods that failed may fit now that later pods are placed (pod affinity to a workload scheduled
        after them, as Karpenter's queue retries); retry while that makes progress, then report."""
        while self.failed:
            retry, self.failed = self.failed, []
            before = sum(len(pods) for _, pods, _ in retry)
            for state, pods, _ in retry:
                self._schedule_pods(state, pods)
            if sum(len(pods) for _, pods, _ in self.failed) == before:
                break
        for _, pods, reason in self.failed:
            self.unschedulable.extend(UnschedulablePod(pod=p, reason=reason) for p in pods)

    def _place(self, state: ClassState, pods: list[str]) -> tuple[int, str]:
        """Place up to len(pods) pods (the first variant that places any wins); (count, reason if 0)."""
        reason = ""
        for index, variant in enumerate(state.cls.parsed.variants):
            placed, reason = self._place_variant(state, index, variant, pods)
            if placed:
                return placed, ""
        return 0, reason

    def _place_variant(self, state: ClassState, index: int, variant: Variant, pods: list[str]) -> tuple[int, str]:
        pins, pin_reason = self.domains.pins(state, index, variant)
        if not pins:
            return 0, "; ".join([pin_reason, *self.pool_problems])
        reason = ""
        for pin in pins:
            reqs = variant.reqs.intersect(pin) if pin else variant.reqs
            if reqs.conflicts():
                reason = f"the pod's node requirements conflict with its topology domain {pin!r}"
                continue
            placed = self._on_targets(state, index, variant, reqs, pin, pods)
            if placed < len(pods):
                more, reason = self._on_new_claims(state, variant, reqs, pods[placed:])
                placed += more
            if placed:
                return placed, ""
        return 0, reason

    def _on_targets(
        self, state: ClassState, index: int, variant: Variant, reqs: Requirements, pin: Requirements, pods: list[str]
    ) -> int:
        key = (id(state), index, pin)
        start = self.cursors.get(key, 0)
        advancing = True
        placed = 0
        position = start
        while position < len(self.all) and placed < len(pods):
            target = self.all[position]
            count, permanent = self._try(state, variant, reqs, target, pods[placed:])
            placed += count
            if count == 0 and permanent and advancing:
                self.cursors[key] = position + 1
            elif count == 0:
                advancing = False
            position += 1
        return placed

    def _on_new_claims(
        self, state: ClassState, variant: Variant, reqs: Requirements, pods: list[str]
    ) -> tuple[int, str]:
        """Launch new claims (each from the first pool, by weight, where the pods fit) until all pods are
        placed or no pool can take them; (count, reason when 0)."""
        placed = 0
        reasons = list(self.pool_problems)
        while placed < len(pods):
            count, reasons_now = self._new_claim(state, variant, reqs, pods[placed:])
            if count == 0:
                if placed == 0:
                    reasons.extend(reasons_now)
                break
            placed += count
        if placed:
            return placed, ""
        existing = len(self.all)
        prefix = f"did not fit {existing} existing node(s) or planned claim(s); " if existing else ""
        return 0, prefix + "; ".join(reasons)

    # --- one target ---------------------------------------------------------------------------------

    def _try(
        self, state: ClassState, variant: Variant, reqs: Requirements, target: Target, pods: list[str]
    ) -> tuple[int, bool]:
        """Place as many of `pods` on `target` as fit; (count, whether a zero is permanent)."""
        requests = state.requests
        if isinstance(target, Claim):
            vector = self._vector(state, target.pool)
            if vector is None or any(value > target.max_free[col] for col, value in vector[1]):
                return 0, True
        parsed = state.cls.parsed
        taints = target.pool.taints if isinstance(target, Claim) else target.taints
        if taints and untolerated(taints, parsed.tolerations, not variant.ignore_prefer_no_schedule):
            return 0, True
        if isinstance(target, NodeTarget) and not reqs.matches_labels(target.labels):
            return 0, True
        want = len(pods)
        if parsed.ports:
            if ports_conflict(target.ports, parsed.ports):
                return 0, True
            want = 1
        cap, permanent = self.domains.hostname_cap(state, variant, target)
        if cap <= 0:
            return 0, permanent
        want = min(want, cap)
        if isinstance(target, NodeTarget):
            count = min(want, fit_count(requests, target.free()))
            if count:
                self._commit_node(state, target, pods[:count], count)
            return count, True
        return self._try_claim(state, reqs, target, pods, want), True

    def _try_claim(self, state: ClassState, reqs: Requirements, claim: Claim, pods: list[str], want: int) -> int:
        pool = claim.pool
        merged = self._merge(pool, claim.reqs, reqs)
        vector = self._vector(state, pool)
        if merged is None or vector is None:
            return 0
        rows = claim.rows
        if merged != claim.reqs:
            rows = rows[self._compatible_mask(pool, merged)[rows]]
        if pool.limits:
            rows = rows[self._affordable(claim, rows)]
        counts = pool.matrix.fit_counts(rows, claim.used, vector[0])
        count = min(want, int(counts.max())) if len(counts) else 0
        if count <= 0:
            return 0
        kept = rows[counts >= count]
        if any(r.min_values for r in merged.values()) and not self._min_values_ok(claim, merged, kept):
            if not self.relax_min_values or claim.pods:  # BestEffort relaxes a new node, not a planned one
                return 0
            merged = self._relaxed_min_values(claim, merged, kept)
            claim.min_values_relaxed = True
        claim.reqs = merged
        claim.rows = kept
        claim.used = claim.used + vector[0] * count
        claim.ports |= state.cls.parsed.ports
        claim.pods.extend(pods[:count])
        claim.refresh()
        Topology.record(state.matching, state.owned, claim.domain, count)
        return count

    def _commit_node(self, state: ClassState, target: NodeTarget, pods: list[str], count: int) -> None:
        target.used = add(target.used, {n: v * count for n, v in state.requests.items()})
        target.ports |= state.cls.parsed.ports
        target.pods.extend(pods)
        Topology.record(state.matching, state.owned, target.domain, count)

    def _budget(self, claim: Claim) -> IntArray:
        """What the claim may count against each of its pool's limits: the room left plus its own share."""
        pool = claim.pool
        remaining = pool.remaining()
        return np.array([remaining[n] + claim.reserved.get(n, 0) for n in pool.limits], dtype=np.int64)

    def _affordable(self, claim: Claim, rows: IntArray) -> npt.NDArray[np.bool_]:
        """Which options the claim could still launch as within the limits, every other claim at its floor.
        Floors only grow while planning, so an option that is not affordable never will be; and since every
        option left is, so is the claim's own floor (it counts the largest of its options)."""
        return np.asarray((claim.pool.capacities(rows) <= self._budget(claim)).all(axis=1), dtype=np.bool_)

    def _min_values_ok(self, claim: Claim, reqs: Requirements, rows: IntArray) -> bool:
        options = [claim.pool.matrix.options[row] for row in rows.tolist()]
        return all(
            claim.distinct_values(key, options, reqs) >= req.min_values for key, req in reqs.items() if req.min_values
        )

    def _relaxed_min_values(self, claim: Claim, reqs: Requirements, rows: IntArray) -> Requirements:
        """`reqs` with each minValues the options `rows` fall short of lowered to the distinct values they
        offer (Karpenter's BestEffort min-values policy)."""
        options = [claim.pool.matrix.options[row] for row in rows.tolist()]
        relaxed = dict(reqs.items())
        for key, req in reqs.items():
            have = claim.distinct_values(key, options, reqs) if req.min_values else 0
            if req.min_values and have < req.min_values:
                relaxed[key] = replace(req, min_values=have or None)
        return Requirements(relaxed)

    def _vector(self, state: ClassState, pool: Pool) -> tuple[IntArray, list[tuple[int, int]]] | None:
        """The class's requests over the pool's resource columns, with its non-zero (column, value) pairs;
        None when it requests a resource no instance type has."""
        key = (id(state), id(pool))
        if key not in self.vector_cache:
            vector = pool.matrix.vector(state.requests)
            self.vector_cache[key] = (
                None if vector is None else (vector, [(c, int(v)) for c, v in enumerate(vector.tolist()) if v])
            )
        return self.vector_cache[key]

    # --- new claims ---------------------------------------------------------------------------------

    def _new_claim(
        self, state: ClassState, variant: Variant, reqs: Requirements, pods: list[str]
    ) -> tuple[int, list[str]]:
        """Place pods on one new claim from the first pool (by weight) that takes them; (count, reasons
        per pool that did not)."""
        reasons: list[str] = []
        parsed = state.cls.parsed
        for pool in self.ready_pools:
            taint = untolerated(pool.taints, parsed.tolerations, not variant.ignore_prefer_no_schedule)
            if taint:
                reasons.append(f"NodePool {pool.name}: the pod does not tolerate taint {taint}")
                continue
            merged, why = pool.merge(pool.reqs, reqs)
            if merged is None:
                reasons.append(f"NodePool {pool.name}: {why}")
                continue
            options = self._compatible(pool, merged)
            if not options:
                reasons.append(f"NodePool {pool.name}: {no_type_reason(pool, merged)}")
                continue
            if parsed.ports and ports_conflict(set(pool.ds_ports), parsed.ports):
                reasons.append(f"NodePool {pool.name}: a daemonset binds the same host port")
                continue
            rows = np.flatnonzero(self._compatible_mask(pool, merged))
            limited = ""
            if pool.limits:
                remaining = pool.remaining()
                within = rows[(pool.capacities(rows) <= np.array(list(remaining.values()))).all(axis=1)]
                if not len(within):
                    reasons.append(f"NodePool {pool.name}: {limits_reason(pool, remaining)}")
                    continue
                if len(within) < len(rows):
                    limited = f"; larger instance types would exceed its limits ({limits_remaining(remaining)})"
                rows = within
            used = pool.matrix.vector({k: v for k, v in pool.ds_overhead.items() if k in pool.matrix.column})
            assert used is not None
            claim = Claim(len(self.claims), pool, merged, rows, used, set(pool.ds_ports))
            claim.refresh()
            self.claims.append(claim)
            self.all.append(claim)
            count, _ = self._try(state, variant, reqs, claim, pods)
            if count:
                return count, reasons
            self._drop(claim)
            reasons.append(self._no_room_reason(state, variant, claim) + limited)
        return 0, reasons

    def _drop(self, claim: Claim) -> None:
        self.claims.pop()
        self.all.pop()
        for name, value in claim.reserved.items():
            claim.pool.used[name] = claim.pool.used.get(name, 0) - value

    def _merge(self, pool: Pool, base: Requirements, reqs: Requirements) -> Requirements | None:
        key = (id(pool), base, reqs)
        found = self.merge_cache.get(key)
        if found is None:
            found = self.merge_cache[key] = pool.merge(base, reqs)
        return found[0]

    def _prices(self, pool: Pool, reqs: Requirements) -> list[float]:
        """Each option's cheapest compatible offering under `reqs` (INF when none)."""
        key = (id(pool), reqs)
        found = self.price_cache.get(key)
        if found is None:
            found = []
            for option in pool.matrix.options:
                price = option.price(reqs)
                found.append(INF if price is None else price)
            self.price_cache[key] = found
        return found

    def _compatible_mask(self, pool: Pool, reqs: Requirements) -> npt.NDArray[np.bool_]:
        key = (id(pool), reqs)
        found = self.mask_cache.get(key)
        if found is None:
            found = np.zeros(len(pool.matrix.options), dtype=bool)
            for option in self._compatible(pool, reqs):
                found[pool.matrix.row_of[id(option)]] = True
            self.mask_cache[key] = found
        return found

    def _compatible(self, pool: Pool, reqs: Requirements) -> list[Option]:
        key = (id(pool), reqs)
        found = self.compat_cache.get(key)
        if found is None:
            type_reqs = pool.type_reqs(reqs)
            found = self.compat_cache[key] = [o for o in pool.options if o.compatible(type_reqs)]
        return found

    # --- topology -----------------------------------------------------------------------------------

    def _no_room_reason(self, state: ClassState, variant: Variant, claim: Claim) -> str:
        cap, _ = self.domains.hostname_cap(state, variant, claim)
        if cap <= 0:
            terms = [t.describe() for t in variant.terms if t.key == HOSTNAME and t.kind == AFFINITY]
            blocking = terms[0] if terms else "pod anti-affinity on hostname"
            return f"{blocking}: no node has a matching pod with room, and a new node would have none"
        min_values = self._min_values_reason(state, claim)
        if min_values:
            return min_values
        return f"NodePool {claim.pool.name}: " + no_room_reason(state.requests, claim)

    def _min_values_reason(self, state: ClassState, claim: Claim) -> str:
        vector = self._vector(state, claim.pool)
        if vector is None:
            return ""
        counts = claim.pool.matrix.fit_counts(claim.rows, claim.used, vector[0])
        options = [claim.pool.matrix.options[row] for row in claim.rows[counts >= 1].tolist()]
        for key, req in claim.reqs.items():
            if req.min_values and options and claim.distinct_values(key, options) < req.min_values:
                have = claim.distinct_values(key, options)
                return (
                    f"NodePool {claim.pool.name}: minValues {req.min_values} for {key} cannot be met: the instance "
                    f"types that fit offer {have} distinct value(s)"
                )
        return ""

    # --- limits -------------------------------------------------------------------------------------

    def _trim_to_limits(self) -> None:
        """Trim each pool's planned claims to options that keep the pool within its limits whatever each
        launches as (see `scheduling.provisioning.limits`); claims keep everything when the limits do not bind."""
        for pool in self.ready_pools:
            claims = [c for c in self.claims if c.pool is pool]
            if not pool.limits or not claims:
                continue
            remaining = pool.remaining()
            budget = np.array(
                [remaining[n] + sum(c.reserved.get(n, 0) for c in claims) for n in pool.limits], dtype=np.int64
            )
            trimmable: list[tuple[Claim, IntArray, Trimmable]] = []
            for claim in claims:
                ordered, floor = claim.floor(claim.rows, claim.reqs)
                entry = Trimmable(pool.sizes[ordered], pool.capacities(ordered), floor or len(ordered))
                trimmable.append((claim, ordered, entry))
            counts = kept_counts([t for _, _, t in trimmable], budget)
            for (claim, ordered, _), count in zip(trimmable, counts, strict=True):
                claim.rows = np.sort(ordered[:count])

    # --- output -------------------------------------------------------------------------------------

    def _plan(self) -> Plan:
        plan = Plan()
        for target in self.targets:
            if target.pods:
                plan.existing_nodes.append(
                    ExistingNodePlacement(name=target.name, pods=sorted(target.pods), node_claim=target.in_flight)
                )
        for claim in self.claims:
            plan.node_claims.append(planned_claim(claim, self._prices(claim.pool, claim.reqs)))
        plan.unschedulable = sorted(self.unschedulable, key=lambda u: u.pod)
        plan.node_pools_without_types = sorted(p.name for p in self.ready_pools if not _has_compatible_type(p))
        return plan


def _has_compatible_type(pool: Pool) -> bool:
    """Whether any instance type of the pool's node class meets the pool's own requirements (stops at the
    first, so it costs little where, as usual, the first does)."""
    type_reqs = pool.type_reqs(pool.reqs)
    return any(o.compatible(type_reqs) for o in pool.options)


def solve(inp: SchedulingInput, options: OptionCache | None = None) -> Plan:
    """Decide where the pending pods go. Pure and deterministic: the same input gives the same plan.
    `options`: instance type options shared with other solves over the same catalog and node class
    objects (scheduling.provisioning.catalog.OptionCache); the plan is the same with or without it."""
    return Solver(inp, options).solve()
