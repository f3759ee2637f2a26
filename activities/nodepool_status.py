"""NodePool status beside its Ready condition, as Karpenter keeps it: `status.resources` and `status.nodes`
(what the pool's nodes add up to, the `NODES` column of `kubectl get nodepools`) and the
`NodeRegistrationHealthy` condition (False after a launch of the pool failed to register, True after one
registered; see https://karpenter.sh/docs/concepts/nodepools/).

A pool's nodes are its NodeClaims and the Nodes labelled with it (`karpenter.sh/nodepool`): a NodeClaim
whose Node exists counts once, with the Node's capacity; one without a Node yet counts with the capacity
on its status (empty before launch), as Karpenter counts in-flight capacity. Every write is a status patch
carrying the resourceVersion read, made only when something changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from apis import labels
from apis.meta import Condition, now_rfc3339, set_condition
from apis.values.quantity import ResourceList, add, format_units, to_resource_list
from kube import ops as kubeops
from kube import resources as r
from kube.types import Kube, Obj

# Always reported, zero when the pool has no node (Karpenter's base resources).
BASE_RESOURCES = ("cpu", "ephemeral-storage", "memory", "nodes", "pods")
REGISTRATION_HEALTHY = "NodeRegistrationHealthy"


def _pool_of(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(labels.NODEPOOL, ""))


def _capacity(obj: Mapping[str, Any]) -> ResourceList:
    try:
        return to_resource_list((obj.get("status") or {}).get("capacity") or {})
    except ValueError:  # an unparsable quantity counts as absent rather than failing the whole pool
        return {}


def pool_resources(nodes: Iterable[Obj], claims: Iterable[Obj]) -> dict[str, tuple[dict[str, str], int]]:
    """Per pool name, (`status.resources`, `status.nodes`) from these Nodes and NodeClaims. Pure. Objects
    without the pool label are not counted; `resources` holds the base resources (zero when absent), every
    other resource a capacity names, and `nodes` (the count)."""
    totals: dict[str, ResourceList] = {}
    counted_nodes: set[str] = set()
    for node in nodes:
        pool = _pool_of(node)
        if pool:
            totals[pool] = add(totals.get(pool, {}), {**_capacity(node), "nodes": 1})
            counted_nodes.add(str(node["metadata"].get("name", "")))
    for claim in claims:
        pool = _pool_of(claim)
        node_name = str((claim.get("status") or {}).get("nodeName") or "")
        if not pool or node_name in counted_nodes:
            continue
        totals[pool] = add(totals.get(pool, {}), {**_capacity(claim), "nodes": 1})
    return {pool: status_of(total) for pool, total in totals.items()}


def status_of(total: Mapping[str, int]) -> tuple[dict[str, str], int]:
    """(`status.resources` as quantity strings, `status.nodes`) of one pool's summed capacity."""
    units = {**dict.fromkeys(BASE_RESOURCES, 0), **total}
    resources = {name: format_units(name, units[name]) for name in sorted(units)}
    return resources, int(units["nodes"])


EMPTY = status_of({})


def _setting_counts(count: Callable[[], tuple[dict[str, str], int]]) -> Callable[[Obj], bool]:
    """A status mutation for `kubeops.update`. The count is taken after the NodePool is read, so a write
    racing with another recount conflicts and is retried on fresh lists rather than writing stale ones."""

    def mutate(obj: Obj) -> bool:
        resources, nodes = count()
        status = obj.setdefault("status", {})
        if status.get("resources") == resources and status.get("nodes") == nodes:
            return False
        status["resources"], status["nodes"] = resources, nodes
        return True

    return mutate


def sync_counts(kube: Kube, pool: str) -> None:
    """Recount one NodePool's `status.resources` and `status.nodes` from a fresh list of its Nodes and
    NodeClaims, and write them when they changed. A pool that does not exist is left alone."""
    selector = f"{labels.NODEPOOL}={pool}"

    def count() -> tuple[dict[str, str], int]:
        nodes, claims = kube.list(r.NODE, label_selector=selector), kube.list(r.NODECLAIM, label_selector=selector)
        return pool_resources(nodes, claims).get(pool, EMPTY)

    kubeops.update(kube, r.NODEPOOL, pool, _setting_counts(count), subresource="status")


def write_counts(kube: Kube, pool: str, counted: tuple[dict[str, str], int]) -> None:
    """Write a pool's `status.resources` and `status.nodes` as counted (from a snapshot), when they
    differ. A pool that does not exist is left alone."""
    kubeops.update(kube, r.NODEPOOL, pool, _setting_counts(lambda: counted), subresource="status")


def sync_all_counts(kube: Kube, pools: Iterable[str]) -> None:
    """`sync_counts` for each of these NodePools."""
    for pool in pools:
        sync_counts(kube, pool)


def set_registration_health(kube: Kube, pool: str, healthy: bool, message: str) -> None:
    """Set NodeRegistrationHealthy on the NodePool: True (a node of it registered) or False with reason
    `RegistrationFailed` and `message` (a launch of it did not register in time). No write when the
    condition already says so; the message of a True condition is kept from its first write, so every
    registration of a healthy pool costs no write."""
    status_value = "True" if healthy else "False"
    reason = REGISTRATION_HEALTHY if healthy else "RegistrationFailed"

    def mutate(obj: Obj) -> bool:
        status = obj.setdefault("status", {})
        conditions = [Condition.model_validate(c) for c in status.get("conditions") or []]
        current = next((c for c in conditions if c.type == REGISTRATION_HEALTHY), None)
        if current is not None and current.status == status_value and (healthy or current.message == message):
            return False
        updated = set_condition(conditions, REGISTRATION_HEALTHY, status_value, reason, message, now_rfc3339())  # type: ignore[arg-type]
        status["conditions"] = [c.to_kube() for c in updated]
        return True

    if pool:
        kubeops.update(kube, r.NODEPOOL, pool, mutate, subresource="status")
