"""ReplicaSet controller: keep ``spec.replicas`` pods alive for every ReplicaSet.

Pods are created from ``spec.template`` with generateName ``<rs>-`` and a controller
ownerReference; pods that are deleted, evicted or finished are replaced. Status reports replicas,
fullyLabeledReplicas, readyReplicas, availableReplicas and observedGeneration.

Surplus pods are chosen as kube-controller-manager's ReplicaSet controller chooses them (its
``ActivePodsWithRanks`` ordering, with the PodDeletionCost and LogarithmicScaleDown features on, as
they are by default; https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/#scaling-a-replicaset).
A pod goes before another when, at the first rule that tells them apart, it is:

1. not yet bound to a node;
2. in an earlier phase (Pending, then Unknown, then Running);
3. not ready;
4. of a lower ``controller.kubernetes.io/pod-deletion-cost`` annotation (0 when absent or invalid);
5. on a node with more active pods of the same owner (the pods of every ReplicaSet controlled by the
   same Deployment, or of this ReplicaSet alone when it has no controller): doubled-up pods go first,
   which spreads the survivors over the nodes;
6. ready for less time, both ready times compared in powers of two of their age (pods in the same
   bucket are ordered by uid, pseudo-randomly);
7. of more container restarts;
8. created more recently, compared in powers of two of the age as in 6.

The pods are ranked once per scale-down step (not again after each deletion), and at most
``BURST_REPLICAS`` are deleted per step, as upstream does.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Sequence
from typing import Any

from devstack.kube import catalog
from devstack.kube.catalog import ServedResource
from devstack.kube.controllers.base import Controller, NsName
from devstack.kube.ownership import controller_of, is_controlled_by, is_deleting, owner_reference
from devstack.kube.patches import clone
from devstack.kube.store import ObjectStore, WatchEvent


def _is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _is_active(pod: dict[str, Any]) -> bool:
    return not is_deleting(pod) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


BURST_REPLICAS = 500  # pods created or deleted per ReplicaSet per sync, like kube-controller-manager
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}  # any other phase counts as Pending


def _deletion_cost(pod: dict[str, Any]) -> int:
    """The pod-deletion-cost annotation as an int32; 0 when absent or not a valid int32."""
    raw = (pod["metadata"].get("annotations") or {}).get(DELETION_COST)
    try:
        cost = int(str(raw))
    except ValueError:
        return 0
    return cost if -(2**31) <= cost < 2**31 else 0


def _parse_time(value: Any) -> datetime.datetime | None:
    """An RFC 3339 timestamp, None when absent or unreadable (the API's zero time)."""
    if not value:
        return None
    try:
        moment = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def _ready_since(pod: dict[str, Any]) -> datetime.datetime | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return _parse_time(condition.get("lastTransitionTime"))
    return None


def _max_restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _age_bucket(moment: datetime.datetime, now: datetime.datetime) -> int:
    """floor(log2(age in nanoseconds)), -1 for a moment not in the past."""
    age = now - moment
    nanoseconds = (age.days * 86_400 + age.seconds) * 1_000_000_000 + age.microseconds * 1_000
    return nanoseconds.bit_length() - 1 if nanoseconds > 0 else -1


def _compare_times(
    a: datetime.datetime | None, b: datetime.datetime | None, uids: tuple[str, str], now: datetime.datetime
) -> int | None:
    """Newer first, by powers of two of the age, uid order within a bucket; a missing time goes first.
    None when the two times are equal (the next rule decides)."""
    if a == b:
        return None
    if a is None or b is None:
        return -1 if a is None else 1
    diff = _age_bucket(a, now) - _age_bucket(b, now)
    if diff == 0:
        return -1 if uids[0] < uids[1] else 1 if uids[0] > uids[1] else 0
    return -1 if diff < 0 else 1


def _sign(value: int) -> int:
    return (value > 0) - (value < 0)


def _compare(a: dict[str, Any], b: dict[str, Any], ranks: dict[str, int], now: datetime.datetime) -> int:
    """Negative when pod `a` should be deleted before pod `b` (the rules in the module docstring)."""
    node_a, node_b = ((p.get("spec") or {}).get("nodeName") or "" for p in (a, b))
    if node_a != node_b and not (node_a and node_b):
        return -1 if not node_a else 1
    phases = [_PHASE_ORDER.get((p.get("status") or {}).get("phase") or "", 0) for p in (a, b)]
    if phases[0] != phases[1]:
        return _sign(phases[0] - phases[1])
    ready_a, ready_b = _is_ready(a), _is_ready(b)
    if ready_a != ready_b:
        return -1 if not ready_a else 1
    costs = _deletion_cost(a), _deletion_cost(b)
    if costs[0] != costs[1]:
        return _sign(costs[0] - costs[1])
    rank_a, rank_b = ranks.get(node_a, 0), ranks.get(node_b, 0)
    if rank_a != rank_b:
        return _sign(rank_b - rank_a)
    uids = (str(a["metadata"].get("uid", "")), str(b["metadata"].get("uid", "")))
    if ready_a and ready_b:
        order = _compare_times(_ready_since(a), _ready_since(b), uids, now)
        if order is not None:
            return order
    restarts = _max_restarts(a), _max_restarts(b)
    if restarts[0] != restarts[1]:
        return _sign(restarts[1] - restarts[0])
    created = (_parse_time(a["metadata"].get("creationTimestamp")), _parse_time(b["metadata"].get("creationTimestamp")))
    order = _compare_times(created[0], created[1], uids, now)
    if order is not None:
        return order
    # Upstream leaves full ties to its unstable sort; uid then name makes the order total here.
    keys = [(str(p["metadata"].get("uid", "")), p["metadata"]["name"]) for p in (a, b)]
    return -1 if keys[0] < keys[1] else 1 if keys[0] > keys[1] else 0


def deletion_order(
    pods: Sequence[dict[str, Any]], related: Sequence[dict[str, Any]], now: datetime.datetime
) -> list[dict[str, Any]]:
    """`pods` (a ReplicaSet's active pods) in the order its controller deletes surplus ones, first first.

    `related` are the pods of the same owner (usually a superset of `pods`); each pod's co-location
    rank is the number of active ones on its node."""
    ranks: dict[str, int] = {}
    for pod in related:
        if _is_active(pod):
            node = (pod.get("spec") or {}).get("nodeName") or ""
            ranks[node] = ranks.get(node, 0) + 1

    def compare(a: dict[str, Any], b: dict[str, Any]) -> int:
        return _compare(a, b, ranks, now)

    return sorted(pods, key=functools.cmp_to_key(compare))


class ReplicaSetController(Controller[NsName]):
    name = "replicaset"

    def __init__(self, store: ObjectStore) -> None:
        super().__init__(store)
        # ReplicaSet uid -> names of the pods it controls (an informer-style index, kept from events).
        self._owned: dict[str, dict[str, None]] = {}
        for pod in store.iter_all(catalog.POD):
            self._track(pod, deleted=False)

    def _track(self, pod: dict[str, Any], deleted: bool) -> dict[str, Any] | None:
        ref = controller_of(pod)
        if not ref or ref.get("kind") != "ReplicaSet":
            return None
        pods = self._owned.setdefault(ref["uid"], {})
        if deleted:
            pods.pop(pod["metadata"]["name"], None)
        else:
            pods[pod["metadata"]["name"]] = None
        return ref

    def keys_for(self, res: ServedResource, event: WatchEvent) -> Iterable[NsName]:
        if res == catalog.REPLICASET:
            if event.type == "DELETED":
                self._owned.pop(event.obj["metadata"]["uid"], None)
            return [(event.obj["metadata"]["namespace"], event.obj["metadata"]["name"])]
        if res == catalog.POD:
            ref = self._track(event.obj, deleted=event.type == "DELETED")
            if ref:
                return [(event.obj["metadata"]["namespace"], ref["name"])]
        return []

    def _pods_of(self, rs: dict[str, Any]) -> list[dict[str, Any]]:
        namespace = rs["metadata"]["namespace"]
        found = (self.store.find(catalog.POD, namespace, n) for n in self._owned.get(rs["metadata"]["uid"], {}))
        return [p for p in found if p is not None and is_controlled_by(p, rs)]

    def _related_pods(self, rs: dict[str, Any], owned: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The pods of every ReplicaSet with the same controller as `rs` (its own when it has none)."""
        owner = controller_of(rs)
        if owner is None:
            return owned
        namespace = rs["metadata"]["namespace"]
        related: list[dict[str, Any]] = []
        for sibling in self.store.list(catalog.REPLICASET, namespace):
            if sibling["metadata"]["uid"] == rs["metadata"]["uid"]:
                related.extend(owned)
            elif (controller_of(sibling) or {}).get("uid") == owner.get("uid"):
                related.extend(self._pods_of(sibling))
        return related

    def reconcile(self, key: NsName) -> None:
        namespace, name = key
        rs = self.store.find(catalog.REPLICASET, namespace, name)
        if rs is None or is_deleting(rs):
            return
        owned = self._pods_of(rs)
        active = [p for p in owned if _is_active(p)]
        wanted = int((rs.get("spec") or {}).get("replicas", 1))
        if len(active) < wanted:
            for _ in range(wanted - len(active)):
                active.append(self.store.create(catalog.POD, namespace, self._new_pod(rs)))
        elif len(active) > wanted:
            surplus = deletion_order(active, self._related_pods(rs, owned), self.store.now())
            surplus = surplus[: min(len(active) - wanted, BURST_REPLICAS)]
            for pod in surplus:
                self.store.delete(catalog.POD, namespace, pod["metadata"]["name"])
            gone = {p["metadata"]["name"] for p in surplus}
            active = [p for p in active if p["metadata"]["name"] not in gone]
        self._write_status(rs, active)

    @staticmethod
    def _new_pod(rs: dict[str, Any]) -> dict[str, Any]:
        template = clone((rs.get("spec") or {}).get("template") or {})
        meta = template.get("metadata") or {}
        meta.pop("name", None)
        meta["generateName"] = f"{rs['metadata']['name']}-"
        meta["namespace"] = rs["metadata"]["namespace"]
        meta["ownerReferences"] = [owner_reference(catalog.REPLICASET, rs)]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec") or {}}

    def _write_status(self, rs: dict[str, Any], active: list[dict[str, Any]]) -> None:
        ready = sum(1 for p in active if _is_ready(p))
        status = {
            **(rs.get("status") or {}),
            "replicas": len(active),
            "fullyLabeledReplicas": len(active),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if status != rs.get("status"):
            meta = rs["metadata"]
            self.store.update(catalog.REPLICASET, meta["namespace"], meta["name"], {**rs, "status": status}, "status")
