"""PodDisruptionBudget arithmetic and the pods/eviction subresource.

Healthy pod: not being deleted, and Ready=True or phase Running. Expected pods: the replicas of
each owning ReplicaSet/StatefulSet, plus one per pod without such an owner. A budget's desired
healthy count comes from ``minAvailable`` (int or percent of expected pods, rounded up) or from
``maxUnavailable`` (expected minus the int or rounded-up percent); with neither it is 0, as in
the disruption controller. Eviction checks the budget live from the store, so two evictions in a
row cannot both spend the same disruption.
"""

from __future__ import annotations

import math
from typing import Any

from devstack.kube import bookkeeping, catalog, errors
from devstack.kube.ownership import controller_of
from devstack.kube.selectors import label_selector_matcher
from devstack.kube.store import ObjectStore

_EVICTION_REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."


def is_healthy(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return ready or status.get("phase") == "Running"


def _is_terminal_or_pending(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Pending")


def _scaled(value: Any, expected: int, field: str, pdb_name: str) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return math.ceil(int(value[:-1]) * expected / 100)
    raise errors.invalid(catalog.PDB, pdb_name, field, f"{value!r} must be an integer or a percentage like '50%'")


_SCALED_OWNERS = {"ReplicaSet": catalog.REPLICASET, "StatefulSet": catalog.STATEFULSET}


def expected_pods(store: ObjectStore, pods: list[dict[str, Any]]) -> int:
    """Pods the budget expects: each owning ReplicaSet/StatefulSet's spec.replicas, plus bare pods."""
    scales: dict[tuple[str, str], int] = {}
    bare = 0
    for pod in pods:
        ref = controller_of(pod)
        owner_res = _SCALED_OWNERS.get(ref.get("kind", "")) if ref else None
        owner = store.find(owner_res, pod["metadata"]["namespace"], ref["name"]) if owner_res and ref else None
        if owner is None:
            bare += 1
        else:
            scales[(owner["kind"], owner["metadata"]["name"])] = int((owner.get("spec") or {}).get("replicas", 1))
    return bare + sum(scales.values())


def selected_pods(store: ObjectStore, pdb: dict[str, Any]) -> list[dict[str, Any]]:
    matcher = label_selector_matcher((pdb.get("spec") or {}).get("selector"))
    return store.list(catalog.POD, pdb["metadata"]["namespace"], matcher)


def budget_status(store: ObjectStore, pdb: dict[str, Any]) -> dict[str, Any]:
    """The ``status`` the disruption controller would write for this budget now."""
    spec, name = pdb.get("spec") or {}, pdb["metadata"]["name"]
    pods = [p for p in selected_pods(store, pdb) if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    expected = expected_pods(store, pods)
    healthy = sum(1 for p in pods if is_healthy(p))
    desired = 0
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, "spec.maxUnavailable", name))
    elif spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, "spec.minAvailable", name)
    allowed = max(0, healthy - desired)
    condition = {
        "type": "DisruptionAllowed",
        "status": "True" if allowed > 0 else "False",
        "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
        "message": "",
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "lastTransitionTime": bookkeeping.timestamp(store.now()),
    }
    for old in (pdb.get("status") or {}).get("conditions") or []:
        if old.get("type") == condition["type"] and old.get("status") == condition["status"]:
            condition["lastTransitionTime"] = old.get("lastTransitionTime", condition["lastTransitionTime"])
    return {
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [condition],
    }


def _budgets_for(store: ObjectStore, pod: dict[str, Any]) -> list[dict[str, Any]]:
    namespace = pod["metadata"]["namespace"]
    return [
        pdb
        for pdb in store.list(catalog.PDB, namespace)
        if label_selector_matcher((pdb.get("spec") or {}).get("selector"))(pod)
    ]


def _check_budget(store: ObjectStore, pod: dict[str, Any]) -> None:
    budgets = _budgets_for(store, pod)
    if len(budgets) > 1:
        raise errors.ApiError(
            500,
            "InternalError",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        )
    if not budgets:
        return
    pdb = budgets[0]
    status = budget_status(store, pdb)
    healthy_pod = is_healthy(pod)
    always = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
    if healthy_pod and status["disruptionsAllowed"] > 0:
        return
    if not healthy_pod and (always or status["currentHealthy"] >= status["desiredHealthy"]):
        return
    cause = (
        f"The disruption budget {pdb['metadata']['name']} needs {status['desiredHealthy']} healthy pods "
        f"and has {status['currentHealthy']} currently"
    )
    raise errors.ApiError(
        429, "TooManyRequests", _EVICTION_REFUSED, {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    )


def evict(store: ObjectStore, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """POST pods/<name>/eviction: delete the pod unless a budget forbids it (429 TooManyRequests)."""
    if isinstance(body, dict):
        body_name = (body.get("metadata") or {}).get("name")
        if body_name and body_name != name:
            raise errors.bad_request(f"name in URL does not match name in Eviction object ({body_name} != {name})")
    pod = store.get(catalog.POD, namespace, name)
    if not pod["metadata"].get("deletionTimestamp") and not _is_terminal_or_pending(pod):
        _check_budget(store, pod)
    options = (body or {}).get("deleteOptions") if isinstance(body, dict) else None
    store.delete(catalog.POD, namespace, name, (options or {}).get("preconditions"))
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
