"""Topology decisions: which domains (zone, capacity type, any label) a pod may go to now, and how many
more pods of a class a node's hostname domain admits. Counts live in `Topology`; this module reads them.

Spread: a domain is allowed while its count + 1 - the lowest count stays within maxSkew (the lowest is 0
with fewer domains than minDomains; for hostname it is always 0, since a new node can always be made).
Affinity: domains with a matching pod, or any domain for the first pod of a self-affine group.
Anti-affinity: domains without a matching pod, and (symmetrically) without a pod whose anti-affinity the
pod matches. Allowed domains come best first: least loaded, then by name.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from apis.labels import HOSTNAME
from scheduling.constraints.requirements import EMPTY, Req, Requirements
from scheduling.constraints.taints import untolerated
from scheduling.constraints.topology import AFFINITY, ANTI, SPREAD, Group, Term, Topology
from scheduling.provisioning.catalog import Option
from scheduling.provisioning.output import domain_values
from scheduling.provisioning.pods import PodClass, Variant
from scheduling.provisioning.pools import Pool
from scheduling.provisioning.targets import BIG, NodeTarget, Target

MAX_PINS = 16


class ClassState:
    """Per-class data derived once: requests, the groups its pods count in, the anti-affinity groups it
    must keep away from (inverse), and the groups it owns."""

    def __init__(self, cls: PodClass, topology: Topology) -> None:
        self.cls = cls
        self.requests = cls.requests
        self.matching = topology.matching_groups(cls.namespace, cls.labels)
        self.self_match = {id(g) for g in self.matching}
        self.owned = [topology.group(t) for t in cls.parsed.owned_anti]
        self.inverse = [g for g in self.matching if g.term.kind == ANTI]
        self.bulk = not any(v.terms for v in cls.parsed.variants) and not self.inverse and not cls.parsed.ports


class Domains:
    """Topology decisions over the ready pools and existing targets (their domain values are cached per
    class, variant and key; the counts are read live)."""

    def __init__(
        self,
        topology: Topology,
        pools: list[Pool],
        targets: list[NodeTarget],
        compatible: Callable[[Pool, Requirements], list[Option]],
    ) -> None:
        self.topology = topology
        self.pools = pools
        self.targets = targets
        self.compatible = compatible
        self.universe_cache: dict[tuple[int, int, str], list[str]] = {}

    def hostname_cap(self, state: ClassState, variant: Variant, target: Target) -> tuple[int, bool]:
        """How many more pods of this class the target's hostname domain admits; whether 0 is final."""
        cap = BIG
        domain = target.domain(HOSTNAME)
        for term in variant.terms:
            if term.key != HOSTNAME:
                continue
            group = self.topology.group(term)
            count = group.count(domain)
            mine = id(group) in state.self_match
            if term.kind == SPREAD and mine:
                cap = min(cap, term.max_skew - count)
            elif term.kind == ANTI:
                if count > 0:
                    return 0, True
                if mine:
                    cap = min(cap, 1)
            elif term.kind == AFFINITY and count == 0 and not (group.total == 0 and mine):
                return 0, False
        for group in state.inverse:
            if group.term.key == HOSTNAME and group.owners.get(domain or ""):
                return 0, True
        return cap, True

    def pins(self, state: ClassState, index: int, variant: Variant) -> tuple[list[Requirements], str]:
        """The domains (for every non-hostname topology key) this pod may go to now, best first."""
        keys = sorted(
            {t.key for t in variant.terms if t.key != HOSTNAME}
            | {g.term.key for g in state.inverse if g.term.key != HOSTNAME}
        )
        if not keys:
            return [EMPTY], ""
        per_key: list[list[str]] = []
        for key in keys:
            domains, reason = self._allowed_domains(state, index, variant, key)
            if not domains:
                return [], reason
            per_key.append(domains)
        pins = [
            Requirements({k: Req.from_operator("In", [d]) for k, d in zip(keys, combo, strict=True)})
            for combo in itertools.islice(itertools.product(*per_key), MAX_PINS)
        ]
        return pins, ""

    def _allowed_domains(self, state: ClassState, index: int, variant: Variant, key: str) -> tuple[list[str], str]:
        universe = self._universe(state, index, variant, key)
        if not universe:
            return [], f"topology key {key}: no NodePool or node offers a value for it"
        allowed = list(universe)
        spread_counts: dict[str, int] = dict.fromkeys(universe, 0)
        for term in variant.terms:
            if term.key != key:
                continue
            group = self.topology.group(term)
            allowed = _narrow(allowed, universe, term, group, id(group) in state.self_match, spread_counts)
            if not allowed:
                return [], f"{term.describe()}: no {key} domain satisfies it (domains: {', '.join(universe)})"
        for group in state.inverse:
            if group.term.key == key:
                allowed = [d for d in allowed if not group.owners.get(d)]
        if not allowed:
            return [], f"pod anti-affinity of running pods on {key}: every domain is excluded"
        allowed.sort(key=lambda d: (spread_counts[d], d))
        return allowed, ""

    def _universe(self, state: ClassState, index: int, variant: Variant, key: str) -> list[str]:
        """Every value of `key` a node could have: from the ready pools (their requirements, labels and
        offerings) and the existing nodes. Spread constraints choose with nodeAffinityPolicy (Honor: only
        where the pod's node requirements allow) and nodeTaintsPolicy (Honor: only where it tolerates the
        taints); affinity terms honour both."""
        cache_key = (id(state), index, key)
        found = self.universe_cache.get(cache_key)
        if found is not None:
            return found
        spreads = [t for t in variant.terms if t.key == key and t.kind == SPREAD]
        honor_affinity = all(t.honor_affinity for t in spreads)
        honor_taints = any(t.honor_taints for t in spreads) or not spreads
        reqs = variant.reqs if honor_affinity else EMPTY
        tolerations = state.cls.parsed.tolerations
        values: set[str] = set()
        for pool in self.pools:
            if honor_taints and untolerated(pool.taints, tolerations, False):
                continue
            merged, _ = pool.merge(pool.reqs, reqs)
            if merged is not None:
                values |= domain_values(key, merged, self.compatible(pool, merged))
        for target in self.targets:
            value = target.domain(key)
            if value is None or not reqs.matches_labels(target.labels):
                continue
            if honor_taints and untolerated(target.taints, tolerations, False):
                continue
            values.add(value)
        found = self.universe_cache[cache_key] = sorted(values)
        return found


def _narrow(
    allowed: list[str], universe: list[str], term: Term, group: Group, mine: bool, spread_counts: dict[str, int]
) -> list[str]:
    """The domains of `allowed` the term leaves (`mine`: the pod matches the term's own selector); a spread
    term also adds its group's counts to `spread_counts`."""
    if term.kind == SPREAD:
        lowest = 0 if len(universe) < term.min_domains else min(group.count(d) for d in universe)
        for d in universe:
            spread_counts[d] += group.count(d)
        return [d for d in allowed if group.count(d) + int(mine) - lowest <= term.max_skew]
    if term.kind == AFFINITY:
        if group.total == 0 and mine:
            return allowed
        return [d for d in allowed if group.count(d) > 0]
    return [d for d in allowed if group.count(d) == 0]
