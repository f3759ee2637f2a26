"""When deciding again would find the same: Karpenter's "consolidated" cluster state. Pure.

Karpenter's disruption controller skips its consolidation methods while the cluster is consolidated: a
pass found nothing to do, and nothing it reads has changed since. Its cluster state also counts as
changed 5 minutes after the last change, so that what no watch shows (an instance type available again,
a new price) is judged again. nodeflow's look ahead (activities.disruption.trigger) does the same:

- `state_key(inp)`: what a decision reads, apart from the clock. For Nodes and bound pods, that is what
  a decision reads of them (`node_facts`, `pod_facts`), not their resourceVersion: a kubelet rewrites
  each Node's status at least every 5 minutes (a heartbeat time) and each pod's as its containers and
  probes go, and keyed on versions a cluster of hundreds of nodes would count as changed at every look.
  Karpenter likewise counts its cluster state as changed on a new pod binding, a deletion, or a node's
  initialization or deletion changing, not on every update. For the rest (NodeClaims, NodePools,
  EC2NodeClasses, PodDisruptionBudgets, DaemonSets, volumes, RuntimeClasses) it is their identities and
  resourceVersions, and for the catalog its offerings (price, availability). Equal keys mean the same
  input. A key has two parts, `watched` (what the leader's watches see change: Nodes, bound
  pods, NodeClaims, NodePools, EC2NodeClasses) and `side` (the rest), so a caller that knows from its
  watches that the first has not changed need only read what the second covers (activities.disruption.decision).
- `Settlement`: what the passes over one key found. The key is settled once every method has had its
  say: no pass found a command, some pass ran to its end (not cut short by its time budget), and every
  single-node consolidation candidate was evaluated by some pass (a pass simulates at most
  `Limits.single_node_candidates`; the rest go first in the next pass). It stays settled until the key
  changes or `until`. `until` is the earliest of these: REVALIDATE after the first of those passes; a
  rejection's `until` (consolidateAfter elapsing, a do-not-disrupt duration lapsing); the end of an
  active scheduled budget window; and the next minute, while a NodePool has any scheduled budget (cron
  fires on the minute).

The same input and clock decide the same, so a settled key needs no pass. What time alone changes is
bounded by `until`. The one input it leaves out is each candidate's disruption cost, which shrinks as
the node ages; it orders the candidates, and REVALIDATE bounds that too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from scheduling.disruption.model import Decision, DisruptionInput, Obj

REVALIDATE = timedelta(minutes=5)  # Karpenter's: its cluster state counts as changed 5 minutes after the last change


def _raw(objs: Iterable[Obj]) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (str(meta.get("namespace") or ""), str(meta.get("name") or ""), str(meta.get("resourceVersion") or ""))
        for meta in ((obj.get("metadata") or {}) for obj in objs)
    )


def node_facts(node: Obj) -> str:
    """What a disruption decision reads of a Node, as one string: its identity, labels, annotations, spec,
    allocatable and capacity, whether it is being deleted, and each condition's type and status (not its
    heartbeat or transition times, nor images, addresses or node info)."""
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    conditions = [(c.get("type"), c.get("status")) for c in status.get("conditions") or [] if isinstance(c, dict)]
    return repr(
        (
            meta.get("name"),
            meta.get("uid"),
            meta.get("deletionTimestamp"),
            meta.get("labels"),
            meta.get("annotations"),
            node.get("spec"),
            status.get("allocatable"),
            status.get("capacity"),
            conditions,
        )
    )


def pod_facts(pod: Obj) -> str:
    """What a disruption decision reads of a bound pod, as one string: its identity, labels, annotations,
    owners, spec, whether it is being deleted, its phase and start time (not its conditions, container
    statuses or addresses)."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    return repr(
        (
            meta.get("namespace"),
            meta.get("name"),
            meta.get("uid"),
            meta.get("deletionTimestamp"),
            meta.get("labels"),
            meta.get("annotations"),
            meta.get("ownerReferences"),
            pod.get("spec"),
            status.get("phase"),
            status.get("startTime"),
        )
    )


def _typed(objs: Sequence[Any]) -> tuple[tuple[str, str], ...]:
    """(name, resourceVersion) of parsed objects (NodeClaim, NodePool, EC2NodeClass)."""
    return tuple((str(obj.metadata.name), str(obj.metadata.resource_version or "")) for obj in objs)


@dataclass(frozen=True)
class StateKey:
    """`state_key`'s two parts (see the module docstring), each a hash."""

    watched: int
    side: int


def watched_key(inp: DisruptionInput) -> int:
    """`StateKey.watched`: Nodes, bound pods, NodeClaims, NodePools and EC2NodeClasses."""
    cluster = inp.cluster
    return hash(
        (
            tuple(node_facts(node) for node in cluster.nodes),
            tuple(pod_facts(pod) for pod in cluster.bound_pods),
            _typed(cluster.node_claims),
            _typed(cluster.node_pools),
            _typed(cluster.node_classes),
        )
    )


def side_key(inp: DisruptionInput) -> int:
    """`StateKey.side`: DaemonSets, volumes, RuntimeClasses, PDBs, the catalog's offerings and the
    settings. `inp.cluster`'s watched lists are not read (they may be left empty)."""
    cluster = inp.cluster
    catalog = tuple(
        (it.name, tuple((o.zone, o.capacity_type, o.price, o.available, o.reservation_id) for o in it.offerings))
        for it in cluster.instance_types
    )
    return hash(
        (
            _raw(cluster.daemonsets),
            _raw(cluster.persistent_volume_claims),
            _raw(cluster.persistent_volumes),
            _raw(cluster.storage_classes),
            _raw(cluster.runtime_classes),
            _raw(inp.pod_disruption_budgets),
            catalog,
            inp.spot_to_spot_consolidation,
            inp.limits.model_dump_json(),
        )
    )


def state_key(inp: DisruptionInput) -> StateKey:
    """What a decision over `inp` reads, but the clock and the single-node order (see the module
    docstring): equal inputs give equal keys within one process."""
    return StateKey(watched_key(inp), side_key(inp))


def _next_minute(now: datetime) -> datetime:
    return now.replace(second=0, microsecond=0) + timedelta(minutes=1)


def decides_the_same_until(inp: DisruptionInput, decision: Decision) -> datetime | None:
    """Until when a pass over `inp` at a later clock decides as `decision` did: None when the decision
    has a command (acting on it changes the cluster), else the earliest time-driven change (see the
    module docstring) or REVALIDATE after `inp.now`."""
    if decision.command is not None:
        return None
    now = inp.now
    moments = [now + REVALIDATE]
    moments += [r.until for r in decision.rejections if r.until is not None and r.until > now]
    for budget in decision.budgets:
        moments += [lim.window_end for lim in budget.limits if lim.window_end is not None and lim.window_end > now]
    if any(b.schedule for pool in inp.cluster.node_pools for b in pool.spec.disruption.budgets):
        moments.append(_next_minute(now))
    return min(moments)


@dataclass(frozen=True)
class Settlement:
    """What the passes over the cluster state `key` found (see the module docstring).

    - unjudged: single-node consolidation candidates that no pass over the key evaluated.
    - finished: some pass over the key ran to its end, not cut short by its time budget.
    - until: the earliest `decides_the_same_until` of those passes (None: one had a command).
    """

    key: StateKey
    unjudged: frozenset[str]
    finished: bool
    until: datetime | None

    def holds(self, key: StateKey, now: datetime) -> bool:
        """Whether a pass over `key` at `now` would find nothing new: the key is this one and settled."""
        return key == self.key and self.finished and not self.unjudged and self.until is not None and now < self.until


def settle(previous: Settlement | None, key: StateKey, inp: DisruptionInput, decision: Decision) -> Settlement:
    """The settlement after `decision`, a pass over `inp` whose state key is `key`, following `previous`
    (the settlement before it, if any). A new key, or a previous one whose `until` passed, starts over."""
    until = decides_the_same_until(inp, decision)
    skipped = frozenset(decision.single_node_skipped)
    finished = not decision.timed_out
    if previous is None or previous.key != key or previous.until is None or inp.now >= previous.until:
        return Settlement(key, skipped, finished, until)
    return Settlement(
        key,
        previous.unjudged & skipped,
        previous.finished or finished,
        None if until is None else min(until, previous.until),
    )
