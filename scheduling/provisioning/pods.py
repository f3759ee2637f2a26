"""Pending pods, parsed once into what scheduling needs, grouped into equivalence classes.

A pod's constraints come as a list of `Variant`s, strictest first: Karpenter's relaxation order. The
first variant treats every preference as required (the first required node-affinity term, the heaviest
preferred node-affinity term, preferred pod (anti-)affinity, ScheduleAnyway spreads, PreferNoSchedule
taints); each next variant relaxes one step: drop the first of several required node-affinity terms,
then a preferred pod-affinity term, then a preferred pod anti-affinity term, then the heaviest preferred
node-affinity term, then a ScheduleAnyway spread, then tolerate PreferNoSchedule taints. Under Karpenter's
preference policy Ignore, the preferences are dropped before the first variant; the required node
affinity terms and PreferNoSchedule taints are relaxed as under Respect.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apis.values.quantity import ResourceList
from scheduling.constraints.requirements import EMPTY, Requirements, from_labels, parse_expressions
from scheduling.constraints.resources import HostPort, host_ports, pod_requests
from scheduling.constraints.taints import Toleration, parse_tolerations
from scheduling.constraints.topology import AFFINITY, ANTI, SPREAD, NamespaceLabels, Term, parse_selector

Obj = Mapping[str, Any]
VolumeResolver = Callable[[str, Obj], Requirements]  # (namespace, pod spec) -> zonal requirements


@dataclass(frozen=True, slots=True)
class Variant:
    """One way to schedule the pod: node requirements, whether PreferNoSchedule taints are ignored, and
    the topology terms it obeys."""

    reqs: Requirements
    ignore_prefer_no_schedule: bool
    terms: tuple[Term, ...]
    relaxed: str = ""  # what this variant gave up, for reasons


@dataclass(frozen=True, slots=True)
class ParsedPod:
    requests: tuple[tuple[str, int], ...]
    ports: frozenset[HostPort]
    tolerations: tuple[Toleration, ...]
    variants: tuple[Variant, ...]
    owned_anti: tuple[Term, ...]  # required anti-affinity terms (others keep away from this pod)
    selector_keys: frozenset[str]  # label keys the pod's own selectors look at
    error: str = ""


@dataclass(slots=True)
class PodClass:
    """Pods that schedule identically: same namespace, relevant labels, requests and constraints."""

    namespace: str
    labels: dict[str, str]
    parsed: ParsedPod
    pods: list[str] = field(default_factory=list)  # "namespace/name", sorted

    @property
    def requests(self) -> ResourceList:
        return dict(self.parsed.requests)


def _node_terms(affinity: Obj, where: str) -> tuple[list[Requirements], list[tuple[int, Requirements]]]:
    node = affinity.get("nodeAffinity") or {}
    required = (node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    terms: list[Requirements] = []
    for index, term in enumerate(required):
        if term.get("matchFields"):
            raise ValueError(
                f"{where}.nodeAffinity...nodeSelectorTerms[{index}].matchFields: not supported by the "
                "provisioner; select nodes by label with matchExpressions"
            )
        terms.append(parse_expressions(term.get("matchExpressions") or [], f"{where}.nodeSelectorTerms[{index}]"))
    preferred: list[tuple[int, Requirements]] = []
    for index, pref in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        exprs = (pref.get("preference") or {}).get("matchExpressions") or []
        preferred.append((int(pref.get("weight", 1)), parse_expressions(exprs, f"{where}.preferred[{index}]")))
    preferred.sort(key=lambda p: -p[0])
    return terms, preferred


def pod_affinity_terms(
    affinity: Obj, kind: str, namespace: str, where: str, namespace_labels: NamespaceLabels | None = None
) -> tuple[list[Term], list[Term]]:
    """(required, preferred heaviest first) pod affinity or anti-affinity terms of `spec.affinity`; a
    term's namespaceSelector selects among `namespace_labels` (topology.parse_selector)."""
    section = affinity.get("podAffinity" if kind == AFFINITY else "podAntiAffinity") or {}

    def term(raw: Obj, weight: int, path: str) -> Term:
        key = raw.get("topologyKey")
        if not key:
            raise ValueError(f"{path}.topologyKey: required")
        selector = parse_selector(
            raw.get("labelSelector"), namespace, path, raw.get("namespaces"), raw.get("namespaceSelector"),
            namespace_labels=namespace_labels,
        )  # fmt: skip
        return Term(kind, str(key), selector, weight=weight)

    required = [
        term(raw, 0, f"{where}.required[{i}]")
        for i, raw in enumerate(section.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    ]
    preferred = [
        term(raw.get("podAffinityTerm") or {}, int(raw.get("weight", 1)), f"{where}.preferred[{i}]")
        for i, raw in enumerate(section.get("preferredDuringSchedulingIgnoredDuringExecution") or [])
    ]
    preferred.sort(key=lambda t: -t.weight)
    return required, preferred


def _spreads(spec: Obj, namespace: str, labels: Mapping[str, str]) -> tuple[list[Term], list[Term]]:
    hard: list[Term] = []
    soft: list[Term] = []
    for index, raw in enumerate(spec.get("topologySpreadConstraints") or []):
        where = f"spec.topologySpreadConstraints[{index}]"
        if not raw.get("topologyKey"):
            raise ValueError(f"{where}.topologyKey: required")
        extra = {k: labels[k] for k in raw.get("matchLabelKeys") or [] if k in labels}
        term = Term(
            SPREAD,
            str(raw["topologyKey"]),
            parse_selector(raw.get("labelSelector"), namespace, where, extra=extra),
            max_skew=max(1, int(raw.get("maxSkew", 1))),
            min_domains=int(raw.get("minDomains") or 0),
            honor_affinity=raw.get("nodeAffinityPolicy", "Honor") == "Honor",
            honor_taints=raw.get("nodeTaintsPolicy", "Ignore") == "Honor",
        )
        (soft if raw.get("whenUnsatisfiable") == "ScheduleAnyway" else hard).append(term)
    return hard, soft


@dataclass
class _Relaxer:
    base: Requirements
    required_terms: list[Requirements]
    preferred_node: list[tuple[int, Requirements]]
    preferred_affinity: list[Term]
    preferred_anti: list[Term]
    soft_spreads: list[Term]
    fixed_terms: list[Term]
    ignore_prefer: bool = False

    def variant(self, relaxed: str) -> Variant:
        reqs = self.base
        if self.required_terms:
            reqs = reqs.intersect(self.required_terms[0])
        if self.preferred_node:
            reqs = reqs.intersect(self.preferred_node[0][1])
        terms = (*self.fixed_terms, *self.preferred_affinity, *self.preferred_anti, *self.soft_spreads)
        return Variant(reqs, self.ignore_prefer, terms, relaxed)

    def relax(self) -> str | None:
        """Give up one preference; what was given up, or None when nothing is left to relax."""
        if len(self.required_terms) > 1:
            self.required_terms.pop(0)
            return "a required node affinity term"
        if self.preferred_affinity:
            return f"preferred {self.preferred_affinity.pop(0).describe()}"
        if self.preferred_anti:
            return f"preferred {self.preferred_anti.pop(0).describe()}"
        if self.preferred_node:
            self.preferred_node.pop(0)
            return "the heaviest preferred node affinity term"
        if self.soft_spreads:
            return f"ScheduleAnyway {self.soft_spreads.pop(0).describe()}"
        if not self.ignore_prefer:
            self.ignore_prefer = True
            return "PreferNoSchedule taints"
        return None


def parse_pod(
    namespace: str,
    labels: Mapping[str, str],
    spec: Obj,
    runtime_overhead: Mapping[str, Mapping[str, int]],
    volume_reqs: VolumeResolver,
    namespace_labels: NamespaceLabels | None = None,
    ignore_preferences: bool = False,
) -> ParsedPod:
    """Everything scheduling needs from one pod; with `ignore_preferences` (Karpenter's preference policy
    Ignore), without its preferred node affinity, preferred pod (anti-)affinity and ScheduleAnyway
    spreads. Raises ValueError naming the field on invalid input."""
    overhead = runtime_overhead.get(str(spec.get("runtimeClassName") or ""))
    if spec.get("runtimeClassName") and overhead is None and spec["runtimeClassName"] not in runtime_overhead:
        raise ValueError(f'spec.runtimeClassName: RuntimeClass "{spec["runtimeClassName"]}" not found')
    requests = pod_requests(spec, overhead)
    affinity = spec.get("affinity") or {}
    base = from_labels({str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()})
    base = base.intersect(volume_reqs(namespace, spec))
    required_terms, preferred_node = _node_terms(affinity, "spec.affinity")
    req_aff, pref_aff = pod_affinity_terms(affinity, AFFINITY, namespace, "spec.affinity.podAffinity", namespace_labels)
    req_anti, pref_anti = pod_affinity_terms(
        affinity, ANTI, namespace, "spec.affinity.podAntiAffinity", namespace_labels
    )
    hard, soft = _spreads(spec, namespace, labels)
    if ignore_preferences:
        preferred_node, pref_aff, pref_anti, soft = [], [], [], []
    relaxer = _Relaxer(base, required_terms, preferred_node, pref_aff, pref_anti, soft, [*hard, *req_aff, *req_anti])
    variants = [relaxer.variant("")]
    while (relaxed := relaxer.relax()) is not None:
        variants.append(relaxer.variant(relaxed))
    every_term = {t for v in variants for t in v.terms}
    selector_keys = frozenset(k for t in every_term for k in t.selector.labels)
    return ParsedPod(
        tuple(sorted(requests.items())),
        host_ports(spec),
        parse_tolerations(spec.get("tolerations") or []),
        tuple(variants),
        tuple(req_anti),
        selector_keys,
    )


INVALID_POD = "invalid pod"  # how the reason of a pod whose spec cannot be read begins


def invalid(error: str) -> ParsedPod:
    return ParsedPod((), frozenset(), (), (Variant(EMPTY, False, ()),), (), frozenset(), error)


def pod_key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def group_pods(
    pods: Sequence[Obj],
    runtime_overhead: Mapping[str, Mapping[str, int]],
    volume_reqs: VolumeResolver,
    extra_selector_keys: frozenset[str] = frozenset(),
    namespace_labels: NamespaceLabels | None = None,
    ignore_preferences: bool = False,
) -> list[PodClass]:
    """Pods into equivalence classes (`parse_pod`, `ignore_preferences` as there). Identical specs are
    parsed once; labels no selector looks at do not split classes. Classes come in first-fit-decreasing
    order: cpu, then memory, descending, then name."""
    cache: dict[str, ParsedPod] = {}
    parsed_pods: list[tuple[str, str, dict[str, str], ParsedPod]] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        spec = pod.get("spec") or {}
        cache_key = json.dumps([namespace, labels, spec], sort_keys=True, default=str)
        parsed = cache.get(cache_key)
        if parsed is None:
            try:
                parsed = parse_pod(
                    namespace, labels, spec, runtime_overhead, volume_reqs, namespace_labels, ignore_preferences
                )
            except (ValueError, TypeError, KeyError) as err:
                parsed = invalid(f"{INVALID_POD}: {err}")
            cache[cache_key] = parsed
        parsed_pods.append((pod_key(pod), namespace, labels, parsed))
    keys = set(extra_selector_keys)
    for _, _, _, parsed in parsed_pods:
        keys |= parsed.selector_keys
    classes: dict[tuple[Any, ...], PodClass] = {}
    for key, namespace, labels, parsed in parsed_pods:
        relevant = {k: v for k, v in labels.items() if k in keys}
        class_key = (namespace, tuple(sorted(relevant.items())), parsed)
        found = classes.get(class_key)
        if found is None:
            found = classes[class_key] = PodClass(namespace, relevant, parsed)
        found.pods.append(key)
    out = list(classes.values())
    for cls in out:
        cls.pods.sort()
    out.sort(key=lambda c: (-c.requests.get("cpu", 0), -c.requests.get("memory", 0), c.pods[0]))
    return out
