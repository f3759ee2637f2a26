"""The binder's fit predicates: pure functions over plain Pod and Node dicts, as kube-scheduler's
filter plugins judge them (a subset: node unschedulable, readiness, taints, node selector and required
node affinity, host ports, resources, required pod anti-affinity on kubernetes.io/hostname).

Resources are in `apis.values.quantity` canonical units (cpu in millicores, everything else in base units).
`filter_reasons` gives, per node, the reasons a pod does not fit worded like the real scheduler's, and
`unschedulable_message` aggregates them into its "0/3 nodes are available: ..." message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from apis.labels import HOSTNAME
from apis.values.quantity import to_units

Obj = Mapping[str, Any]
Resources = dict[str, int]

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")
TERMINAL_PHASES = ("Succeeded", "Failed")
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def _requests(container: Obj) -> Resources:
    """A container's requests, defaulted from its limits as the API server does."""
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: to_units(name, value) for name, value in merged.items()}


def _add(total: Resources, more: Mapping[str, int]) -> Resources:
    out = dict(total)
    for name, value in more.items():
        out[name] = out.get(name, 0) + value
    return out


def _max(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    return {name: max(a.get(name, 0), b.get(name, 0)) for name in sorted({*a, *b})}


def pod_requests(pod: Obj) -> Resources:
    """Effective requests: the containers' sum plus restartable (sidecar) init containers, or the
    largest one-shot init container with the sidecars started before it, whichever is more; plus the
    pod overhead and one `pods` slot."""
    spec = pod.get("spec") or {}
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in spec.get("initContainers") or []:
        if container.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, _requests(container))
        else:
            init_peak = _max(init_peak, _add(sidecars, _requests(container)))
    regular: Resources = {}
    for container in spec.get("containers") or []:
        regular = _add(regular, _requests(container))
    total = _max(_add(regular, sidecars), init_peak)
    overhead = {name: to_units(name, value) for name, value in (spec.get("overhead") or {}).items()}
    return _add(_add(total, overhead), {"pods": 1})


def allocatable(node: Obj) -> Resources:
    raw = (node.get("status") or {}).get("allocatable") or {}
    return {name: to_units(name, value) for name, value in raw.items()}


def is_ready(node: Obj) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def is_active(pod: Obj) -> bool:
    """Still holds its node's resources: not Succeeded or Failed (terminating pods still count)."""
    return (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """One toleration matches one taint (empty key with Exists matches every key; empty effect every
    effect)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return bool(toleration.get("key")) and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(taints: Iterable[Obj], tolerations: Sequence[Obj]) -> Obj | None:
    """The first NoSchedule/NoExecute taint no toleration matches (PreferNoSchedule never blocks)."""
    for taint in taints:
        if taint.get("effect") in SCHEDULING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def expression_matches(expression: Obj, values_by_key: Mapping[str, str]) -> bool:
    """A node selector requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against labels."""
    key, operator = expression.get("key", ""), expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    present = key in values_by_key
    value = values_by_key.get(key, "")
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        have, bound = _int(value), _int(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _term_matches(term: Obj, node: Obj) -> bool:
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    fields = {"metadata.name": meta.get("name", "")}
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False  # an empty term matches no node
    return all(expression_matches(e, labels) for e in expressions) and all(
        expression_matches(e, fields) for e in field_expressions
    )


def matches_node_selection(pod: Obj, node: Obj) -> bool:
    """spec.nodeSelector (every label equal) and the required node affinity (any term, all of its
    expressions)."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    return any(_term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


def insufficient_resources(requests: Mapping[str, int], available: Mapping[str, int]) -> list[str]:
    """The resources (sorted) whose request exceeds what is still available on the node."""
    return sorted(name for name, value in requests.items() if value > 0 and value > available.get(name, 0))


def host_ports(pod: Obj) -> set[tuple[str, str, int]]:
    """(protocol, host IP, port) of every container's hostPort; 0.0.0.0 stands for any address."""
    ports: set[tuple[str, str, int]] = set()
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                ports.add((port.get("protocol", "TCP"), port.get("hostIP") or "0.0.0.0", int(port["hostPort"])))
    return ports


def ports_conflict(wanted: set[tuple[str, str, int]], used: set[tuple[str, str, int]]) -> bool:
    for protocol, ip, port in wanted:
        for used_protocol, used_ip, used_port in used:
            same_ip = ip == used_ip or "0.0.0.0" in (ip, used_ip)
            if protocol == used_protocol and port == used_port and same_ip:
                return True
    return False


def label_selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and In/NotIn/Exists/DoesNotExist expressions); a missing
    selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(expression_matches(e, labels) for e in selector.get("matchExpressions") or [])


def hostname_anti_affinity_terms(pod: Obj) -> list[Obj]:
    """The pod's required pod anti-affinity terms on kubernetes.io/hostname (the only topology the
    binder judges)."""
    anti = ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
    terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return [t for t in terms if t.get("topologyKey") == HOSTNAME]


def _term_selects(term: Obj, owner: Obj, candidate: Obj) -> bool:
    """Whether a pod affinity term written on `owner` selects `candidate`: namespaces listed, else a
    namespaceSelector (treated as every namespace: namespace labels are not consulted), else the
    owner's own namespace."""
    owner_ns = (owner.get("metadata") or {}).get("namespace", "")
    candidate_meta = candidate.get("metadata") or {}
    namespaces = term.get("namespaces") or []
    if namespaces:
        in_scope = candidate_meta.get("namespace", "") in namespaces
    else:
        in_scope = term.get("namespaceSelector") is not None or candidate_meta.get("namespace", "") == owner_ns
    return in_scope and label_selector_matches(term.get("labelSelector"), candidate_meta.get("labels") or {})


def anti_affinity_reason(
    pod: Obj, node_pods: Sequence[Obj], pods_with_terms: Sequence[Obj] | None = None
) -> str | None:
    """Required pod anti-affinity on kubernetes.io/hostname, both ways: the pod's own terms against the
    node's pods, and the node's pods' terms against the pod. `pods_with_terms`, when given, are the
    node's pods that have such terms (the only ones the second check needs)."""
    for term in hostname_anti_affinity_terms(pod):
        if any(_term_selects(term, pod, other) for other in node_pods):
            return "node(s) didn't match pod anti-affinity rules"
    for other in node_pods if pods_with_terms is None else pods_with_terms:
        if any(_term_selects(term, other, pod) for term in hostname_anti_affinity_terms(other)):
            return "node(s) didn't satisfy existing pods anti-affinity rules"
    return None


def _taint_text(taint: Obj) -> str:
    return f"{{{taint.get('key', '')}: {taint.get('value') or ''}}}"


def _resource_reason(name: str) -> str:
    return "Too many pods" if name == "pods" else f"Insufficient {name}"


def filter_reasons(
    pod: Obj,
    node: Obj,
    node_pods: Sequence[Obj],
    used: Mapping[str, int],
    *,
    requests: Mapping[str, int] | None = None,
    node_allocatable: Mapping[str, int] | None = None,
    node_ports: set[tuple[str, str, int]] | None = None,
    pods_with_terms: Sequence[Obj] | None = None,
) -> list[str]:
    """Why `pod` cannot bind to `node`, whose active pods are `node_pods` using `used` resources; empty
    when it fits. Filters run in the scheduler's order and stop at the first failing one. `requests`,
    `node_allocatable`, `node_ports` (the host ports of `node_pods`) and `pods_with_terms` (those of
    `node_pods` with hostname anti-affinity terms) may be passed precomputed: a binder pass judges every
    pending pod against every node, so recomputing them per pair costs O(pods x nodes x pods/node)."""
    spec = pod.get("spec") or {}
    if (node.get("spec") or {}).get("unschedulable"):
        return ["node(s) were unschedulable"]
    if not is_ready(node):
        return [f"node(s) had untolerated taint {{{NOT_READY_TAINT}: }}"]
    taint = untolerated_taint((node.get("spec") or {}).get("taints") or [], spec.get("tolerations") or [])
    if taint is not None:
        return [f"node(s) had untolerated taint {_taint_text(taint)}"]
    if not matches_node_selection(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    if node_ports is None:
        node_ports = set()
        for other in node_pods:
            node_ports |= host_ports(other)
    if ports_conflict(host_ports(pod), node_ports):
        return ["node(s) didn't have free ports for the requested pod ports"]
    capacity = allocatable(node) if node_allocatable is None else node_allocatable
    free = {name: value - used.get(name, 0) for name, value in capacity.items()}
    short = insufficient_resources(pod_requests(pod) if requests is None else requests, free)
    if short:
        return [_resource_reason(name) for name in short]
    reason = anti_affinity_reason(pod, node_pods, pods_with_terms)
    return [reason] if reason else []


def most_allocated_score(
    requests: Mapping[str, int], used: Mapping[str, int], node_allocatable: Mapping[str, int]
) -> float:
    """Share of the node's cpu and memory in use once the pod is placed (0..1, higher packs tighter)."""
    shares = []
    for name in ("cpu", "memory"):
        total = node_allocatable.get(name, 0)
        if total > 0:
            shares.append(min(1.0, (used.get(name, 0) + requests.get(name, 0)) / total))
    return sum(shares) / len(shares) if shares else 0.0


def unschedulable_message(reasons_per_node: Sequence[Sequence[str]]) -> str:
    """kube-scheduler's FitError text: "0/<nodes> nodes are available: <count> <reason>, ...." with the
    "<count> <reason>" parts sorted."""
    if not reasons_per_node:
        return "no nodes available to schedule pods"
    counts = Counter(reason for reasons in reasons_per_node for reason in reasons)
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{len(reasons_per_node)} nodes are available: {', '.join(parts)}."
