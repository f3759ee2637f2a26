"""Topology: spread constraints and pod (anti-)affinity as counts of matching pods per domain.

A `Term` is one constraint a pod obeys (kind "spread", "affinity" or "anti") over a topology key. Terms
that are equal share one `Group`, so every pod of a workload updates and reads the same counts, whatever
its size. `Group.counts[domain]` counts pods that match the term's selector; `Group.owners[domain]`
counts pods that carry an anti-affinity term (so a pod matching its selector keeps away from them:
Kubernetes' symmetric anti-affinity).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apis.labels import HOSTNAME
from scheduling.constraints.requirements import Requirements, from_labels, parse_expressions

METADATA_NAME = "kubernetes.io/metadata.name"

SPREAD, AFFINITY, ANTI = "spread", "affinity", "anti"
NamespaceLabels = Mapping[str, Mapping[str, str]]  # each Namespace's labels, by its name


def namespace_labels(namespaces: list[Any]) -> dict[str, dict[str, str]]:
    """Each Namespace object's labels by its name, with the `kubernetes.io/metadata.name` label the API
    server sets on every namespace."""
    out: dict[str, dict[str, str]] = {}
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        name = str(meta.get("name", ""))
        out[name] = {**{str(k): str(v) for k, v in (meta.get("labels") or {}).items()}, METADATA_NAME: name}
    return out


@dataclass(frozen=True, slots=True)
class Selector:
    """A label selector over pod labels; `namespaces` None means every namespace. A missing selector
    (`nothing`) matches no pod, as in Kubernetes; an empty one matches every pod."""

    labels: Requirements
    namespaces: frozenset[str] | None
    nothing: bool = False

    def describe(self) -> str:
        if self.nothing:
            return "no selector: matches no pod"
        return "pods with " + (", ".join(f"{k} {r.describe()}" for k, r in self.labels.items()) or "any labels")

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if self.nothing or (self.namespaces is not None and namespace not in self.namespaces):
            return False
        return self.labels.matches_labels(labels)


@dataclass(frozen=True, slots=True)
class Term:
    kind: str
    key: str
    selector: Selector
    max_skew: int = 1
    min_domains: int = 0
    honor_affinity: bool = True  # nodeAffinityPolicy Honor
    honor_taints: bool = False  # nodeTaintsPolicy Honor
    weight: int = 0  # preferred terms: their weight; required terms: 0

    def describe(self) -> str:
        what = {SPREAD: "topology spread", AFFINITY: "pod affinity", ANTI: "pod anti-affinity"}[self.kind]
        return f"{what} on {self.key} ({self.selector.describe()})"


@dataclass(slots=True)
class Group:
    term: Term
    counts: dict[str, int] = field(default_factory=dict)
    owners: dict[str, int] = field(default_factory=dict)
    total: int = 0

    def count(self, domain: str | None) -> int:
        return 0 if domain is None else self.counts.get(domain, 0)


def parse_selector(
    selector: Mapping[str, Any] | None,
    namespace: str,
    where: str,
    namespaces: list[str] | None = None,
    namespace_selector: Mapping[str, Any] | None = None,
    extra: Mapping[str, str] | None = None,
    namespace_labels: NamespaceLabels | None = None,
) -> Selector:
    """A labelSelector (matchLabels and matchExpressions) plus the namespaces it looks in, as Kubernetes
    reads a pod (anti-)affinity term: every namespace for an empty namespaceSelector; else the listed
    ones and those whose labels (`namespace_labels`, by namespace name) a namespaceSelector selects; the
    pod's own when neither is given. Without `namespace_labels` a namespaceSelector selects none."""
    nothing = selector is None
    selector = selector or {}
    reqs = from_labels(selector.get("matchLabels") or {}).intersect(
        parse_expressions(selector.get("matchExpressions") or [], f"{where}.labelSelector.matchExpressions")
    )
    if extra:
        reqs = reqs.intersect(from_labels(extra))
    scope: frozenset[str] | None
    if namespace_selector is not None and not namespace_selector:
        scope = None
    elif namespace_selector:
        chosen = from_labels(namespace_selector.get("matchLabels") or {}).intersect(
            parse_expressions(namespace_selector.get("matchExpressions") or [], f"{where}.namespaceSelector")
        )
        selected = {name for name, labels in (namespace_labels or {}).items() if chosen.matches_labels(labels)}
        scope = frozenset(namespaces or ()) | selected
    else:
        scope = frozenset(namespaces) if namespaces else frozenset([namespace])
    return Selector(reqs, scope, nothing)


class Topology:
    """Every group by term, with their counts. Domains: a node's label value for the key (its name for
    hostname), a new NodeClaim's pinned value (its own id for hostname)."""

    def __init__(self) -> None:
        self.groups: dict[Term, Group] = {}

    def group(self, term: Term) -> Group:
        found = self.groups.get(term)
        if found is None:
            found = self.groups[term] = Group(term)
        return found

    def matching_groups(self, namespace: str, labels: Mapping[str, str]) -> list[Group]:
        return [g for g in self.groups.values() if g.term.selector.matches(namespace, labels)]

    @staticmethod
    def record(
        matching: list[Group], owned: list[Group], domain_of: Callable[[str], str | None], count: int = 1
    ) -> None:
        """Count `count` pods placed on a node whose domain per key `domain_of(key)` returns."""
        for group in matching:
            domain = domain_of(group.term.key)
            if domain is not None:
                group.counts[domain] = group.counts.get(domain, 0) + count
                group.total += count
        for group in owned:
            domain = domain_of(group.term.key)
            if domain is not None:
                group.owners[domain] = group.owners.get(domain, 0) + count


def is_hostname(key: str) -> bool:
    return key == HOSTNAME
