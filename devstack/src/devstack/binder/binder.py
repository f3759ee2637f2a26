"""`PodBinder`: the local stack's stand-in for kube-scheduler.

One pass (`bind_once`) reads every Node and Pod, then takes the pending pods (no spec.nodeName, not
deleting, not terminal, for the default scheduler) in creation order and binds each to the node it fits
best (`devstack.binder.predicates`; most allocated first, then by name) through the pods/binding
subresource, counting each binding against that node for the rest of the pass. Nodes only fill up during a
pass, so a pod with the same namespace, labels and spec as one that fit nowhere earlier in the pass (the
replicas of a Deployment) fits nowhere either, and is not filtered again. A pod that fits nowhere
gets `PodScheduled=False, reason=Unschedulable` with the scheduler's message (the signal nodeflow's pod
watcher reacts to), written when the condition changes; a message that only changes (another node count)
is rewritten at most every `MESSAGE_REFRESH_SECONDS` per pod, as kube-scheduler retries an unschedulable
pod after a backoff of at most that long rather than on every node that joins. API failures are logged and
retried on the next pass.

`run` reads pods and nodes from its watches (`devstack.wakeup.ChangeFeed` with `cache`) rather than with a
LIST per pass; a pod it bound (or marked) counts as what it wrote until the watch shows it, as
kube-scheduler assumes a pod on its node before the binding is seen. `run` makes passes when pods or nodes
change, every `poll_interval` while passes bind pods or fail, and at least every `backstop_interval`
seconds otherwise: an idle cluster costs one pass per backstop, not one per poll.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from devstack.binder import predicates as fit
from devstack.wakeup import ChangeFeed, Changes, keep, read_objects, run_passes
from kube.errors import ConflictError, KubeError, NotFoundError
from kube.resources import NODE, POD, Resource
from kube.types import Kube, Obj

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER = "default-scheduler"
MESSAGE_REFRESH_SECONDS = 10.0  # kube-scheduler's default podMaxBackoffSeconds


def binding_resource(pod_name: str) -> Resource:
    """The pods/<name>/binding subresource as a creatable collection (the Kube Protocol's `create`
    posts to a collection path)."""
    return Resource("", "v1", f"pods/{pod_name}/binding", "Binding", True)


def is_pending(pod: Mapping[str, Any]) -> bool:
    """Waiting for this scheduler: unbound, not deleting, not terminal, default scheduler."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    return (
        not spec.get("nodeName")
        and not meta.get("deletionTimestamp")
        and fit.is_active(pod)
        and spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
    )


def _creation_order(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = pod.get("metadata") or {}
    return (meta.get("creationTimestamp") or "", meta.get("namespace") or "", meta.get("name") or "")


def _shape(pod: Mapping[str, Any]) -> str:
    """What the fit predicates read of a pending pod: its namespace, labels and spec."""
    meta = pod.get("metadata") or {}
    return json.dumps([meta.get("namespace"), meta.get("labels"), pod.get("spec")], sort_keys=True, default=str)


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")


def _is_unschedulable(pod: Mapping[str, Any]) -> bool:
    """The pod already carries PodScheduled=False with reason Unschedulable."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in conditions
    )


def unschedulable_conditions(pod: Mapping[str, Any], message: str, now: str) -> list[Obj] | None:
    """The pod's conditions with PodScheduled=False/Unschedulable/`message`, or None if already so."""
    conditions = [dict(c) for c in (pod.get("status") or {}).get("conditions") or []]
    current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
    wanted = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    if current is not None and all(current.get(k) == v for k, v in wanted.items()):
        return None
    transition = current.get("lastTransitionTime") if current and current.get("status") == "False" else now
    updated = {**wanted, "lastProbeTime": None, "lastTransitionTime": transition or now}
    others = [c for c in conditions if c.get("type") != "PodScheduled"]
    return [*others, updated]


class _Node:
    """A node and what is bound to it (pods, resources and host ports in use, pods with hostname
    anti-affinity terms), updated as the pass binds pods."""

    def __init__(self, node: Obj) -> None:
        self.node = node
        self.name: str = node["metadata"]["name"]
        self.allocatable = fit.allocatable(node)
        self.pods: list[Obj] = []
        self.used: dict[str, int] = {}
        self.ports: set[tuple[str, str, int]] = set()
        self.pods_with_terms: list[Obj] = []

    def add(self, pod: Obj, requests: Mapping[str, int]) -> None:
        self.pods.append(pod)
        for name, value in requests.items():
            self.used[name] = self.used.get(name, 0) + value
        self.ports |= fit.host_ports(pod)
        if fit.hostname_anti_affinity_terms(pod):
            self.pods_with_terms.append(pod)


class PodBinder:
    """See the module docstring. Not thread-safe: run one binder per cluster, from one thread."""

    def __init__(
        self,
        kube: Kube,
        poll_interval: float = 0.2,
        *,
        backstop_interval: float = 2.0,
        watch_seconds: int = 30,
    ) -> None:
        """`poll_interval`: the least time between passes, and the pace while passes bind or fail;
        `backstop_interval`: the most time between passes when nothing changes; `watch_seconds`: the
        length of each pod and node watch (a stopped binder's watch threads end within it)."""
        self._kube = kube
        self._poll_interval = poll_interval
        self._backstop_interval = backstop_interval
        self._watch_seconds = watch_seconds
        self._failed = False
        self._message_written: dict[str, float] = {}  # pod uid -> when its Unschedulable message was last written
        self._feed: ChangeFeed | None = None  # run's watches; without them (bind_once alone) passes LIST

    def run(self, stop: threading.Event) -> None:
        """Bind on change (see the module docstring) until `stop` is set; returns within about one pass."""
        feed = ChangeFeed(self._kube, [POD, NODE], name="pod binder", watch_seconds=self._watch_seconds, cache=True)
        self._feed = feed
        run_passes(self._pass, feed, stop, poll_interval=self._poll_interval, backstop=self._backstop_interval,
                   name="pod binder")  # fmt: skip

    def _pass(self, changes: Changes) -> bool:
        """One pass for `run`; busy when it bound a pod or an API call failed."""
        return self.bind_once() > 0 or self._failed

    def bind_once(self) -> int:
        """One pass; returns how many pods it bound."""
        self._failed = False
        try:
            nodes = self._list(NODE)
            pods = self._list(POD)
        except KubeError as exc:
            log.warning("pod binder: listing nodes and pods failed, retrying next pass: %s", exc)
            self._failed = True
            return 0
        state = {n["metadata"]["name"]: _Node(n) for n in nodes}
        for pod in pods:
            target = state.get((pod.get("spec") or {}).get("nodeName") or "")
            if target is not None and fit.is_active(pod):
                target.add(pod, fit.pod_requests(pod))
        by_name = [state[name] for name in sorted(state)]
        pending = sorted(filter(is_pending, pods), key=_creation_order)
        uids = {_pod_key(pod) for pod in pending}
        self._message_written = {uid: at for uid, at in self._message_written.items() if uid in uids}
        unplaceable: dict[str, str] = {}  # pod shape (see _shape) -> the message of one that fit nowhere
        bound = 0
        for pod in pending:
            shape = _shape(pod)
            if shape in unplaceable:
                self._mark_unschedulable(pod, unplaceable[shape])
                continue
            placed, message = self._schedule(pod, by_name)
            bound += placed
            if message is not None:
                unplaceable[shape] = message
        return bound

    def _list(self, resource: Resource) -> list[Obj]:
        return read_objects(self._kube, self._feed, resource)

    def _schedule(self, pod: Obj, nodes: Sequence[_Node]) -> tuple[int, str | None]:
        """(1 when bound else 0, the Unschedulable message when the pod fits on no node)."""
        requests = fit.pod_requests(pod)
        reasons: list[list[str]] = []
        best = -1.0
        chosen: _Node | None = None
        for node in nodes:
            why = fit.filter_reasons(
                pod,
                node.node,
                node.pods,
                node.used,
                requests=requests,
                node_allocatable=node.allocatable,
                node_ports=node.ports,
                pods_with_terms=node.pods_with_terms,
            )
            reasons.append(why)
            if why:
                continue
            # Highest score wins; among equals the first by name (names are visited in order).
            score = fit.most_allocated_score(requests, node.used, node.allocatable)
            if score > best:
                best, chosen = score, node
        if chosen is None:
            message = fit.unschedulable_message(reasons)
            self._mark_unschedulable(pod, message)
            return 0, message
        if not self._bind(pod, chosen.name):
            return 0, None
        bound = {**pod, "spec": {**pod.get("spec", {}), "nodeName": chosen.name}}
        chosen.add(bound, requests)
        keep(self._feed, POD, bound)  # assumed bound until the watch shows it (as kube-scheduler assumes)
        return 1, None

    def _bind(self, pod: Obj, node_name: str) -> bool:
        meta = pod["metadata"]
        binding = {
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace"), "uid": meta.get("uid")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        if not binding["metadata"]["uid"]:
            del binding["metadata"]["uid"]
        try:
            self._kube.create(binding_resource(meta["name"]), binding, meta.get("namespace"))
        except (NotFoundError, ConflictError) as exc:
            log.info("pod binder: pod %s/%s changed before binding: %s", meta.get("namespace"), meta["name"], exc)
            return False
        except KubeError as exc:
            log.warning("pod binder: binding %s/%s failed: %s", meta.get("namespace"), meta["name"], exc)
            self._failed = True
            return False
        log.info("pod binder: bound %s/%s to %s", meta.get("namespace"), meta["name"], node_name)
        return True

    def _mark_unschedulable(self, pod: Obj, message: str) -> None:
        meta = pod["metadata"]
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = unschedulable_conditions(pod, message, now)
        if conditions is None:
            return
        uid = _pod_key(pod)
        if _is_unschedulable(pod) and time.monotonic() - self._message_written.get(uid, 0.0) < MESSAGE_REFRESH_SECONDS:
            return  # only the message changed, and it was written a moment ago
        patch: Obj = {"status": {"conditions": conditions}}
        if meta.get("resourceVersion"):
            # A compare-and-swap: the conditions list is replaced whole.
            patch["metadata"] = {"resourceVersion": meta["resourceVersion"]}
        try:
            marked = self._kube.patch(POD, meta["name"], patch, meta.get("namespace"), subresource="status")
        except KubeError as exc:
            log.info("pod binder: marking %s/%s unschedulable failed: %s", meta.get("namespace"), meta["name"], exc)
            self._failed = True
            return
        self._message_written[uid] = time.monotonic()
        keep(self._feed, POD, marked)
        log.info("pod binder: %s/%s is unschedulable: %s", meta.get("namespace"), meta["name"], message)
