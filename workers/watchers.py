"""Kubernetes watchers in the worker process: they turn cluster events into Temporal signals.

- PodWatcher: pending, unschedulable pods -> one `pods_pending` signal to the provisioner per
  FLUSH_SECONDS with new ones, carrying how many distinct pods were seen (the provisioner's solver reads
  the pods itself, so the signal carries nothing more into the workflow's history); and again every
  RESIGNAL_SECONDS while any is still pending: that periodic nudge is what retries provisioning after a
  failed launch. The same watch feeds PodEventStamper.
- PodEventStamper: a pod bound to a node, turning terminal or terminating, or deleted -> the node's
  NodeClaim `status.lastPodEventTime` (what `consolidateAfter` counts from), as Karpenter's pod-events
  controller keeps it; see its docstring.
- DeletionWatcher: a NodeClaim or a Node (holding our finalizer) being deleted, or a NodeClaim removed
  -> `delete` signal to the claim's workflow. Running claims do not poll: this watch, and the garbage
  collector's rounds behind it (activities.garbage_collection.collector), are how they learn they are going away.
  The same two watches tell a claim waiting for its Node (launched, not Initialized) that the Node
  appeared or changed: `node_changed`, once per change of what registration and initialization look at
  (the Node's Ready condition and taints), so those phases wait on the watch instead of polling. The
  Node watch also keeps the worker's NodeDirectory (providerID -> Node), so registration finds a claim's
  Node without listing every Node (kube.node_directory).
- DriftTrigger: a NodePool's or EC2NodeClass's spec changed (its generation rose) -> `check_drift`
  signal to each of its claims' workflows (at most SIGNALS_PER_SECOND), so drift is marked within
  seconds rather than at the next periodic check.

Only the worker holding the leader-election Lease runs them (workers.worker, workers.leadership): with
several replicas, one set of watchers. When it stops leading, their stop event is set at once and no
watch event is handled after it; a watch blocked on the API ends at its next event or timeout.

Each watch is a `kube.reflector.Reflector`: one LIST, then watches that resume from the last
resourceVersion seen, as Karpenter's informers do; a relist (after 410 Gone or a failure) reports what
was deleted meanwhile as DELETED. Given a `kube.watch_cache.WatchCache` (`cache`), the watches also keep
its stores: the leader's other readers of the whole cluster read those instead of LISTing. Watchers run
in threads (the Kubernetes client is synchronous) and hand signals to the event loop. Errors are logged
and the watch lists again after a short pause: the worker keeps running.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from activities.nodeclaim import ownership
from apis import labels
from apis.nodeclaim import INITIALIZED
from kube import resources as r
from kube.errors import KubeError, NotFoundError
from kube.node_directory import NodeDirectory
from kube.reflector import Reflector
from kube.types import Kube, Obj
from kube.watch_cache import WatchCache, read
from scheduling.disruption.candidates import parse_time
from scheduling.disruption.pod_events import PodEvent, PodEventTracker
from scheduling.provisioning.provisionable import is_provisionable, pod_key
from workers.temporal.starter import TemporalStarter
from workflows.messages import NodeClaimSignal

log = logging.getLogger(__name__)
FLUSH_SECONDS = 0.2
RESIGNAL_SECONDS = 15.0
SIGNALS_PER_SECOND = 100.0
POD_EVENT_DEDUPE = timedelta(seconds=10)  # Karpenter's: under the 15 s validation of a disruption command
POD_EVENT_FLUSH_SECONDS = 1.0
CLAIM_INDEX_SECONDS = 30.0
MAX_INDEXED_NODES = 50_000
# The resources the watchers below list and watch, together: what a WatchCache they share can keep.


class _Watcher:
    def __init__(self, kube: Kube, starter: TemporalStarter, loop: asyncio.AbstractEventLoop) -> None:
        self.kube = kube
        self.starter = starter
        self.loop = loop
        self.cache: WatchCache | None = None  # keeps the full objects of every watch, when set (see _reflect)

    def _call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def _reflect(
        self,
        resource: r.Resource,
        handle: Callable[[str, Obj], None],
        stop: threading.Event,
        synced: Callable[[], None] | None = None,
    ) -> None:
        """List and watch `resource` until `stop` (kube.reflector.Reflector): `synced` after each LIST;
        each event kept in `self.cache` when set."""
        store = self.cache.store(resource) if self.cache is not None else None
        Reflector(self.kube, resource, handle, synced, store=store).run(stop)


class PodWatcher(_Watcher):
    """One pod watch for two consumers: pending pods signal the provisioner, and every pod event goes to
    `pod_events` (PodEventStamper), so the API server serves one pod watch stream per worker, not two."""

    def __init__(
        self,
        kube: Kube,
        starter: TemporalStarter,
        loop: asyncio.AbstractEventLoop,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(kube, starter, loop)
        self.monotonic = monotonic
        self._pending: set[str] = set()  # provisionable pods, as the watch last saw them
        self._new = False  # a pod became pending since the last signal
        self._signalled_at: float | None = None
        self._lock = threading.Lock()
        self.pod_events = PodEventStamper(kube, cache=lambda: self.cache)

    def run(self, stop: threading.Event) -> None:
        flusher = threading.Thread(target=self._flush_forever, args=(stop,), name="pod-signal-flusher", daemon=True)
        stamper = threading.Thread(
            target=self.pod_events.flush_forever, args=(stop,), name="pod-event-stamper", daemon=True
        )
        flusher.start()
        stamper.start()
        self._reflect(r.POD, self._on_event, stop)
        flusher.join(timeout=5)
        stamper.join(timeout=5)

    def _on_event(self, event_type: str, pod: Obj) -> None:
        key = pod_key(pod)
        pending = event_type in ("ADDED", "MODIFIED") and is_provisionable(pod)
        with self._lock:
            if pending and key not in self._pending:
                self._pending.add(key)
                self._new = True
            elif not pending:
                self._pending.discard(key)
        self.pod_events.observe(event_type, pod)

    def due(self) -> int:
        """How many pods to signal the provisioner about now (0: no signal): all pending ones when one
        became pending since the last signal, or when RESIGNAL_SECONDS passed since it with some still
        pending. Marks them signalled."""
        now = self.monotonic()
        with self._lock:
            stale = self._signalled_at is None or now - self._signalled_at >= RESIGNAL_SECONDS
            if not self._pending or not (self._new or stale):
                return 0
            self._new, self._signalled_at = False, now
            return len(self._pending)

    def _flush_forever(self, stop: threading.Event) -> None:
        while not stop.wait(FLUSH_SECONDS):
            seen = self.due()
            if not seen:
                continue
            try:
                self._call(self.starter.signal_provisioner(seen))
            except Exception:
                log.exception("signalling the provisioner failed; it is signalled again within %ss", RESIGNAL_SECONDS)


def _utc_now() -> datetime:
    return datetime.now(UTC)


class PodEventStamper:
    """Keeps each NodeClaim's `status.lastPodEventTime` at the last time a pod was bound to its node, went
    terminal or terminating, or was deleted from it (scheduling.disruption.pod_events says which pod
    events count and at what time), as Karpenter's pod-events controller does.

    The watch thread calls `observe` for each pod event (a pod deleted while no watch was open comes as
    DELETED when the watch lists again: kube.reflector); the stamps
    collect per node (the latest time wins) and `flush`, every POD_EVENT_FLUSH_SECONDS, writes them: the
    node's NodeClaim is found by its status.nodeName, else by the Node's providerID, from an index of the
    NodeClaims relisted every CLAIM_INDEX_SECONDS or when a node is not in it. The relist reads the
    leader's watch cache (what `cache` returns; kube.watch_cache.read) once its watches have listed, else
    the API: in a scale-up nearly every flush has a pod on a node new to the index. A node found to have no
    claim stays in the index as such, across relists, until a claim names it: pods churning on nodes that
    are not Karpenter's cost no lists. A stamp within POD_EVENT_DEDUPE of the claim's stored one, or
    older, is not written (ownership.stamp_last_pod_event, which guards the write by the claim's uid).
    Best effort: a failed write is logged and the next pod event on the node stamps again; a failed list
    keeps the stamps for the next flush."""

    def __init__(
        self,
        kube: Kube,
        clock: Callable[[], datetime] = _utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        cache: Callable[[], WatchCache | None] = lambda: None,
    ) -> None:
        self.kube = kube
        self.cache = cache
        self.clock = clock
        self.monotonic = monotonic
        self.tracker = PodEventTracker()  # only the watch thread touches it
        self._pending: dict[str, datetime] = {}
        self._lock = threading.Lock()
        self._claims: dict[str, tuple[str, str] | None] = {}  # node name -> (claim name, uid); None: no claim
        self._stamps: dict[str, datetime] = {}  # claim name -> its lastPodEventTime, as last listed or written
        self._listed_at: float | None = None

    def observe(self, event_type: str, pod: Obj) -> None:
        """One pod watch event (ADDED, MODIFIED, DELETED). Never raises for a malformed pod."""
        try:
            event = self.tracker.observe(event_type, pod, self.clock())
        except (AttributeError, TypeError, ValueError):
            log.warning("pod event of %s ignored: malformed pod", pod_key(pod) if isinstance(pod, dict) else pod)
            return
        if event is not None:
            self._add([event])

    def _add(self, events: Iterable[PodEvent]) -> None:
        with self._lock:
            for node, when in events:
                if node not in self._pending or self._pending[node] < when:
                    self._pending[node] = when

    def pending(self) -> dict[str, datetime]:
        """The stamps not yet written, by node name."""
        with self._lock:
            return dict(self._pending)

    def flush_forever(self, stop: threading.Event) -> None:
        while not stop.wait(POD_EVENT_FLUSH_SECONDS):
            self.flush()

    def flush(self) -> int:
        """Write the collected stamps; returns how many NodeClaims were stamped. Never raises."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return 0
        stale = self._listed_at is None or self.monotonic() - self._listed_at > CLAIM_INDEX_SECONDS
        if stale or any(node not in self._claims for node in pending):
            try:
                self._relist(pending)
            except Exception:
                log.exception("listing NodeClaims for pod events failed; retrying at the next flush")
                self._add(pending.items())
                return 0
        stamped = 0
        for node, when in sorted(pending.items()):
            found = self._claims.get(node)
            if found is None:
                continue  # not a Karpenter node
            name, uid = found
            stored = self._stamps.get(name)
            if stored is not None and stored > when - POD_EVENT_DEDUPE:
                continue
            try:
                if ownership.stamp_last_pod_event(self.kube, ownership.node_claim(name, uid), when, POD_EVENT_DEDUPE):
                    self._stamps[name] = when
                    stamped += 1
                else:  # gone, replaced, or stamped meanwhile by someone else: relist next time
                    self._listed_at = None
            except Exception:
                log.exception("stamping lastPodEventTime of NodeClaim %s failed; its next pod event retries", name)
        return stamped

    def _relist(self, pending: dict[str, datetime]) -> None:
        """Rebuild the node -> NodeClaim index; nodes of `pending` no claim names are looked up by the
        Node's providerID."""
        claims = read(self.kube, r.NODECLAIM, self.cache())
        index: dict[str, tuple[str, str] | None] = {}
        by_provider: dict[str, tuple[str, str]] = {}
        self._stamps = {}
        for claim in claims:
            meta, status = claim.get("metadata") or {}, claim.get("status") or {}
            ident = (str(meta.get("name", "")), str(meta.get("uid", "")))
            if status.get("nodeName"):
                index[str(status["nodeName"])] = ident
            if status.get("providerID"):
                by_provider[str(status["providerID"])] = ident
            stamp = parse_time(status.get("lastPodEventTime"))
            if stamp is not None:
                self._stamps[ident[0]] = stamp
        for node, known in self._claims.items():
            if known is None and node not in index and len(index) < MAX_INDEXED_NODES:
                index.setdefault(node, None)  # known to be no Karpenter node: not looked up again
        for node in pending:
            if node in index:
                continue
            index[node] = None  # unless its Node's providerID names a claim
            try:
                provider_id = (self.kube.get(r.NODE, node).get("spec") or {}).get("providerID")
            except NotFoundError:
                continue
            except KubeError:
                log.warning("reading Node %s for its NodeClaim failed; its pod event is dropped", node)
                continue
            index[node] = by_provider.get(provider_id) if provider_id else None
        self._claims = index
        self._listed_at = self.monotonic()


def _node_of_claim(claim: Obj) -> tuple[str, str]:
    """The Node a NodeClaim's status names: (status.nodeName, status.providerID), '' where unset."""
    status = claim.get("status") or {}
    return str(status.get("nodeName") or ""), str(status.get("providerID") or "")


def _node_fingerprint(node: Obj) -> tuple[str, tuple[str, ...]]:
    """What registration and initialization look at on a Node: its Ready status and its taints (the
    unregistered taint left out: registration itself removes it)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((str(c.get("status")) for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), "")
    taints = (node.get("spec") or {}).get("taints") or []
    keys = sorted(f"{t.get('key')}:{t.get('effect')}" for t in taints
                  if isinstance(t, dict) and t.get("key") != labels.UNREGISTERED_TAINT_KEY)  # fmt: skip
    return ready, tuple(keys)


def _waits_for_node(claim: Obj) -> bool:
    """The claim launched (has a providerID), is not being deleted and is not Initialized yet."""
    status = claim.get("status") or {}
    if not status.get("providerID") or claim["metadata"].get("deletionTimestamp"):
        return False
    conditions = status.get("conditions") or []
    return not any(isinstance(c, dict) and c.get("type") == INITIALIZED and c.get("status") == "True"
                   for c in conditions)  # fmt: skip


class DeletionWatcher(_Watcher):
    def __init__(
        self,
        kube: Kube,
        starter: TemporalStarter,
        loop: asyncio.AbstractEventLoop,
        nodes: NodeDirectory | None = None,
    ) -> None:
        """`nodes`: the directory the Node watch keeps (complete once the watch listed every Node, reset
        when `run` returns)."""
        super().__init__(kube, starter, loop)
        self.nodes = nodes or NodeDirectory()
        self._signalled: set[str] = set()
        self._lock = threading.Lock()
        self._waiting: dict[str, str] = {}  # providerID -> the claim waiting for that Node
        self._nodes: dict[str, tuple[str, tuple[str, ...]]] = {}  # providerID -> its Node's last fingerprint
        self._told: dict[str, tuple[str, tuple[str, ...]]] = {}  # providerID -> the fingerprint last signalled
        # claim name -> (status.nodeName, status.providerID), as the claim watch last saw it; complete once
        # the claim watch listed every claim. A deleting Node's claims are found here rather than with a
        # LIST of every claim per Node event (a scale-down of N nodes would list N claims N times).
        self._claims: dict[str, tuple[str, str]] = {}
        self._claims_complete = False

    def run(self, stop: threading.Event) -> None:
        nodes = threading.Thread(
            target=self._reflect,
            args=(r.NODE, self._on_node, stop, self.nodes.mark_complete),
            name="node-deletion-watch",
            daemon=True,
        )
        nodes.start()
        try:
            self._reflect(r.NODECLAIM, self._on_claim, stop, self._claims_listed)
            nodes.join(timeout=5)
        finally:
            self.nodes.reset()

    def _claims_listed(self) -> None:
        with self._lock:
            self._claims_complete = True

    def _on_claim(self, event_type: str, claim: Obj) -> None:
        name = claim["metadata"]["name"]
        node_name, provider_id = _node_of_claim(claim)
        with self._lock:
            if event_type == "DELETED":
                self._claims.pop(name, None)
            else:
                self._claims[name] = (node_name, provider_id)
        if event_type == "DELETED":
            # Removed outright (its finalizer taken off by hand): the workflow, if still running, ends it.
            self._signal(name, "the NodeClaim no longer exists")
            self._signalled.discard(name)
        elif claim["metadata"].get("deletionTimestamp"):
            self._signal(name, "NodeClaim deleted")
        if provider_id:
            self._track_waiting(name, provider_id, event_type != "DELETED" and _waits_for_node(claim))

    def _track_waiting(self, name: str, provider_id: str, waiting: bool) -> None:
        with self._lock:
            if not waiting:
                self._waiting.pop(provider_id, None)
                self._told.pop(provider_id, None)
                return
            self._waiting[provider_id] = name
            seen = self._nodes.get(provider_id)
        if seen is not None:  # the Node was watched before the claim's providerID was
            self._tell(provider_id, seen)

    def _on_node(self, event_type: str, node: Obj) -> None:
        meta = node["metadata"]
        provider_id = str(node.get("spec", {}).get("providerID") or "")
        if provider_id:
            if event_type == "DELETED":
                self.nodes.drop(provider_id, meta["name"])
                with self._lock:
                    self._nodes.pop(provider_id, None)
            else:
                self.nodes.put(provider_id, meta["name"], str(meta.get("uid") or ""))
                fingerprint = _node_fingerprint(node)
                with self._lock:
                    self._nodes[provider_id] = fingerprint
                self._tell(provider_id, fingerprint)
        if event_type == "DELETED" or not meta.get("deletionTimestamp"):
            return
        if labels.TERMINATION_FINALIZER not in (meta.get("finalizers") or []):
            return
        for name in self._claims_of_node(meta["name"], provider_id):
            self._signal(name, f"Node {meta['name']} deleted")

    def _claims_of_node(self, node_name: str, provider_id: str) -> list[str]:
        """The claims whose status names the Node (by name or providerID): from the claim watch's index once
        it is complete, else from a LIST. One missed by a lagging watch hears at the Node's next event or
        the garbage collector's round."""
        with self._lock:
            known = dict(self._claims) if self._claims_complete else None
        if known is None:
            known = {claim["metadata"]["name"]: _node_of_claim(claim) for claim in self.kube.list(r.NODECLAIM)}
        return sorted(
            name
            for name, (claim_node, claim_provider) in known.items()
            if claim_node == node_name or (provider_id and claim_provider == provider_id)
        )

    def _tell(self, provider_id: str, fingerprint: tuple[str, tuple[str, ...]]) -> None:
        """Signal `node_changed` to the claim waiting for this Node, once per fingerprint."""
        with self._lock:
            name = self._waiting.get(provider_id)
            if name is None or self._told.get(provider_id) == fingerprint:
                return
            self._told[provider_id] = fingerprint
        try:
            self._call(
                self.starter.signal_node_claim(name, NodeClaimSignal.NODE_CHANGED, f"Node of {provider_id} changed")
            )
        except Exception:
            log.exception("signalling nodeclaim-%s failed; its own backstop timer looks again", name)
            with self._lock:
                self._told.pop(provider_id, None)

    def _signal(self, name: str, reason: str) -> None:
        if name in self._signalled:
            return
        try:
            if self._call(self.starter.signal_node_claim(name, NodeClaimSignal.DELETE, reason)):
                self._signalled.add(name)
        except Exception:
            log.exception("signalling nodeclaim-%s failed; the garbage collector's round catches up", name)


class DriftTrigger(_Watcher):
    """Signals `check_drift` to the claims of a NodePool or EC2NodeClass whose spec changed. The first
    sight of an object (the worker starting) only records its generation; a change seen later, also across
    watch restarts, signals. Signals are paced (`signals_per_second`) so a change of a pool of thousands of
    nodes does not burst thousands of checks at once. A change made while no worker led, or a signal that
    failed, is caught by the leader's claim sweep (activities.nodeclaim.sweep), which judges every drift reason."""

    def __init__(
        self,
        kube: Kube,
        starter: TemporalStarter,
        loop: asyncio.AbstractEventLoop,
        signals_per_second: float = SIGNALS_PER_SECOND,
    ) -> None:
        super().__init__(kube, starter, loop)
        self.pause = 1.0 / signals_per_second
        self._generations: dict[tuple[str, str], int] = {}
        self._stop = threading.Event()

    def run(self, stop: threading.Event) -> None:
        self._stop = stop
        classes = threading.Thread(
            target=self._reflect,
            args=(r.EC2NODECLASS, self._on_node_class, stop),
            name="nodeclass-drift-watch",
            daemon=True,
        )
        classes.start()
        self._reflect(r.NODEPOOL, self._on_node_pool, stop)
        classes.join(timeout=5)

    def _changed(self, resource: r.Resource, event_type: str, obj: Obj) -> bool:
        """The object's spec changed since it was last seen (never on first sight or deletion)."""
        key = (resource.plural, obj["metadata"]["name"])
        if event_type == "DELETED":
            self._generations.pop(key, None)
            return False
        generation = int(obj["metadata"].get("generation", 0))
        previous = self._generations.get(key)
        self._generations[key] = generation
        return previous is not None and generation > previous

    def _on_node_pool(self, event_type: str, pool: Obj) -> None:
        if self._changed(r.NODEPOOL, event_type, pool):
            name = pool["metadata"]["name"]
            claims = self.kube.list(r.NODECLAIM, label_selector=f"{labels.NODEPOOL}={name}")
            self._signal_all([c["metadata"]["name"] for c in claims], f"NodePool {name} changed")

    def _on_node_class(self, event_type: str, node_class: Obj) -> None:
        if self._changed(r.EC2NODECLASS, event_type, node_class):
            name = node_class["metadata"]["name"]
            claims = [
                c["metadata"]["name"]
                for c in self.kube.list(r.NODECLAIM)
                if ((c.get("spec") or {}).get("nodeClassRef") or {}).get("name") == name
            ]
            self._signal_all(claims, f"EC2NodeClass {name} changed")

    def _signal_all(self, names: list[str], reason: str) -> None:
        log.info("%s: checking drift of %d NodeClaims", reason, len(names))
        for name in names:
            if self._stop.is_set():
                return
            try:
                self._call(self.starter.signal_node_claim(name, NodeClaimSignal.CHECK_DRIFT, reason))
            except Exception:  # Temporal unreachable: do not wait out a timeout per claim
                log.exception("signalling nodeclaim-%s failed; the claim sweep signals the rest", name)
                return
            self._stop.wait(self.pause)
