"""The interruption consumer: EC2 interruption events from the SQS queue -> disrupted NodeClaims.

Karpenter's interruption handling (https://karpenter.sh/docs/concepts/disruption/#interruption): on a
spot interruption warning, an AWS Health scheduled change, or an instance stopping or terminating, it
deletes the instance's NodeClaim at once, so the node is tainted, drained and terminated and its pods
go back to provisioning; for a spot interruption it first marks the offering (instance type, zone,
spot) unavailable, so that provisioning does not launch the same offering again. A rebalance
recommendation only records an event. The kinds, and the events recorded, are
cloudprovider.aws.interruption.messages's.

Here the leader runs one `InterruptionConsumer` in a thread (workers.worker `_lead`), like the
Kubernetes watchers: it long-polls the queue and handles each batch, acting through a `ClaimDisrupter`
(which the instance status checker, activities.interruption.instance_status, shares):

- A message is deleted from the queue only once its action is durably recorded: the NodeClaim's
  workflow accepted the `delete` signal (Temporal has written it to the workflow's history), or there
  is nothing to act on (no NodeClaim has the instance: it is gone or not ours; the workflow is no longer
  running; a rebalance recommendation, whose event is best effort as every event). A message whose
  NodeClaims could not be listed or whose signal failed is left on the queue: SQS delivers it again
  after the queue's visibility timeout. So does every message of a batch the worker dies holding.
- A duplicate does nothing twice: an event already acted on (by EventBridge's event id, else SQS's
  message id) is only deleted, and a NodeClaim already signalled is not signalled or marked again
  (both remembered, boundedly, by this consumer; after a restart the workflow's `delete` signal is
  idempotent: the first reason stays).
- A malformed or unknown message is counted (`counts.unknown`), logged with its message id and the
  reason, and deleted; the consumer carries on.

Metrics (activities.metrics.registry, Karpenter's names): every message received counts in
`karpenter_interruption_received_messages_total` by `message_type` (MESSAGE_TYPES, `unknown` for one
that does not parse), every delete in `karpenter_interruption_deleted_messages_total` (and, when the
event says when it happened, the time since in `karpenter_interruption_message_queue_duration_seconds`),
and every NodeClaim whose workflow accepted the signal (from the queue or the instance status checker)
in `karpenter_nodeclaims_disrupted_total` with the message type as the reason, the claim's NodePool and
capacity type.

The unavailable-offerings mark lives in this worker's cache (cloudprovider.unavailable), which the
provisioning rounds this worker runs read; with several replicas, a round run by another replica does
not see it (its own launch of the same offering would then be refused by EC2 and marked there).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from activities.metrics.labels import owner_labels, seconds_since
from activities.metrics.registry import Metrics
from apis import labels
from cloudprovider.aws.interruption.messages import (
    ACTIONS,
    Kind,
    ParsedMessage,
    UnknownMessage,
    parse_message,
)
from cloudprovider.aws.interruption.queue import QueueMessage
from cloudprovider.types import instance_id_of
from cloudprovider.unavailable import UnavailableOfferings
from kube import resources as r
from kube.errors import KubeError
from kube.types import Kube, Obj

log = logging.getLogger(__name__)
RETRY_PAUSE_SECONDS = 1.0
REMEMBERED = 10_000  # event ids and NodeClaim uids remembered to recognise duplicates
TERMINATING_REASON = "TerminatingOnInterruption"  # Karpenter's event when it deletes the NodeClaim
# Each kind as the `message_type` (and disruption `reason`) label: snake_case, as Karpenter's kinds are.
MESSAGE_TYPES: dict[Kind, str] = {
    Kind.SPOT_INTERRUPTION: "spot_interrupted",
    Kind.REBALANCE_RECOMMENDATION: "rebalance_recommendation",
    Kind.SCHEDULED_CHANGE: "scheduled_change",
    Kind.INSTANCE_UNHEALTHY: "instance_unhealthy",
    Kind.INSTANCE_STOPPING: "instance_stopped",
    Kind.INSTANCE_TERMINATING: "instance_terminated",
    Kind.NO_ACTION: "no_op",
}
UNKNOWN_MESSAGE_TYPE = "unknown"


class Queue(Protocol):
    """cloudprovider.aws.interruption.queue.InterruptionQueue's surface the consumer uses."""

    def receive(self) -> list[QueueMessage]: ...
    def delete(self, message: QueueMessage) -> None: ...


class Recorder(Protocol):
    """kube.events.EventRecorder's surface the consumer uses (never raises)."""

    def record(self, involved: Obj, event_type: str, reason: str, message: str) -> None: ...


# Signal the `delete` of NodeClaim `name`'s workflow with `reason`: True when the workflow accepted it,
# False when it is not running; raises when the signal could not be delivered. Blocking, thread-safe.
DeleteSignal = Callable[[str, str], bool]


@dataclass
class Counts:
    """What the consumer has done since it was built."""

    received: int = 0
    acted: int = 0  # NodeClaims disrupted (their workflow accepted the signal)
    unknown: int = 0  # malformed or unknown messages (deleted)
    duplicates: int = 0  # messages of an event already acted on (deleted)
    deleted: int = 0
    left: int = 0  # messages left on the queue for redelivery


class Bounded:
    """A set remembering the last `size` keys added."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._size = size

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def add(self, key: str) -> None:
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self._size:
            self._keys.popitem(last=False)


class ClaimDisrupter:
    """The action on an interruption event: each of its instances' NodeClaim disrupted (the `delete`
    signal with the event's reason, and its events recorded), the offering marked for a spot
    interruption. Shared by the queue's consumer and the instance status checker
    (activities.interruption.instance_status), so a NodeClaim one of them disrupted is not signalled again by the other.
    Thread-safe; `act` blocks while it signals."""

    def __init__(
        self,
        kube: Kube,
        signal_delete: DeleteSignal,
        unavailable: UnavailableOfferings,
        recorder: Recorder,
        metrics: Metrics | None = None,
    ) -> None:
        self.metrics = metrics or Metrics()
        self.kube = kube
        self.signal_delete = signal_delete
        self.unavailable = unavailable
        self.recorder = recorder
        self._claims_disrupted = Bounded()
        self._lock = threading.Lock()

    def claims_by_instance(self) -> dict[str, Obj]:
        """instance id -> NodeClaim, by the claims' status.providerID (`aws:///<zone>/<instance id>`).
        Raises what listing raises."""
        index: dict[str, Obj] = {}
        for claim in self.kube.list(r.NODECLAIM):
            provider_id = str((claim.get("status") or {}).get("providerID") or "")
            if provider_id:
                index[instance_id_of(provider_id)] = claim
        return index

    def act(self, event: ParsedMessage, claims: dict[str, Obj], source: str) -> tuple[bool, int]:
        """Act on every instance of `event` (`claims` from `claims_by_instance`; `source` names where the
        event came from, for the log): (whether each action is recorded or there was none, how many
        NodeClaims were disrupted now). Never raises."""
        if event.kind == Kind.NO_ACTION:
            return True, 0
        with self._lock:
            return self._act(event, claims, source)

    def _act(self, event: ParsedMessage, claims: dict[str, Obj], source: str) -> tuple[bool, int]:
        action = ACTIONS[event.kind]
        done, acted = True, 0
        for instance_id in event.instance_ids:
            claim = claims.get(instance_id)
            if claim is None:
                log.info("%s for instance %s: no NodeClaim has it; nothing to do", event.kind, instance_id)
                continue
            meta = claim.get("metadata") or {}
            name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
            text = f"{action.message} ({instance_id}{', ' + event.detail if event.detail else ''})"
            if not action.disrupts:
                self._record(claim, action.event_type, action.event_reason, text)
                continue
            if uid and uid in self._claims_disrupted:
                log.info("%s for NodeClaim %s: already disrupted; nothing more to do", event.kind, name)
                continue
            if action.marks_offering:
                self._mark_offering(claim, instance_id)
            reason = f"{action.event_reason}: {text}"
            try:
                accepted = self.signal_delete(name, reason)
            except Exception:
                log.exception("signalling NodeClaim %s (%s, %s) failed; it is tried again", name, event.kind, source)
                done = False
                continue
            if uid:
                self._claims_disrupted.add(uid)
            if not accepted:
                log.info("%s for NodeClaim %s: its workflow is no longer running; nothing to do", event.kind, name)
                continue
            acted += 1
            owner = owner_labels(meta.get("labels") or {})
            self.metrics.nodeclaims_disrupted.labels(reason=MESSAGE_TYPES[event.kind], **owner).inc()
            log.info("NodeClaim %s disrupted (%s): %s", name, source, reason)
            self._record(claim, action.event_type, action.event_reason, text)
            self._record(claim, "Warning", TERMINATING_REASON, f"Interruption triggered termination ({event.kind})")
        return done, acted

    def _mark_offering(self, claim: Obj, instance_id: str) -> None:
        """Mark the claim's offering (its instance-type, zone and capacity-type labels) unavailable."""
        claim_labels = (claim.get("metadata") or {}).get("labels") or {}
        offering = [claim_labels.get(k, "") for k in (labels.INSTANCE_TYPE, labels.ZONE, labels.CAPACITY_TYPE)]
        if not all(offering):
            log.warning("spot interruption of %s: its NodeClaim names no full offering %s; none marked",
                        instance_id, offering)  # fmt: skip
            return
        self.unavailable.mark(offering[0], offering[1], offering[2], reason="SpotInterruption")

    def _record(self, claim: Obj, event_type: str, reason: str, message: str) -> None:
        """The event on the NodeClaim and, when it has one, its Node."""
        self.recorder.record(claim, event_type, reason, message)
        node_name = (claim.get("status") or {}).get("nodeName")
        if not node_name:
            return
        try:
            node = self.kube.get(r.NODE, str(node_name))
        except KubeError:
            return
        self.recorder.record(node, event_type, reason, message)


def _event_time(body: str) -> str | None:
    """The `time` of the EventBridge event in a message body (when it happened), None when there is none."""
    try:
        event = json.loads(body)
    except ValueError:
        return None
    when = event.get("time") if isinstance(event, dict) else None
    return when if isinstance(when, str) else None


class InterruptionConsumer:
    """Consumes the interruption queue (see the module docstring), acting through `disrupter`.
    `run(stop)` until `stop` is set; `handle(messages)` handles one batch (the tests call it directly)."""

    def __init__(self, queue: Queue, disrupter: ClaimDisrupter) -> None:
        self.queue = queue
        self.disrupter = disrupter
        self.metrics = disrupter.metrics
        self.counts = Counts()
        self._events_done = Bounded()
        self._lock = threading.Lock()

    def run(self, stop: threading.Event) -> None:
        """Receive and handle batches until `stop`. A batch received after `stop` is left on the queue."""
        while not stop.is_set():
            try:
                messages = self.queue.receive()
            except Exception:
                log.exception("receiving from the interruption queue failed; retrying")
                stop.wait(RETRY_PAUSE_SECONDS)
                continue
            if stop.is_set():
                return
            if messages:
                self.handle(messages)

    def handle(self, messages: Sequence[QueueMessage]) -> Counts:
        """Handle one batch; returns the running counts. Never raises."""
        with self._lock:
            self.counts.received += len(messages)
            parsed: list[tuple[QueueMessage, ParsedMessage]] = []
            for message in messages:
                result = parse_message(message.body)
                kind = UNKNOWN_MESSAGE_TYPE if isinstance(result, UnknownMessage) else MESSAGE_TYPES[result.kind]
                self.metrics.interruption_received.labels(message_type=kind).inc()
                if isinstance(result, UnknownMessage):
                    self.counts.unknown += 1
                    log.warning("interruption message %s deleted: %s", message.message_id, result.reason)
                    self._delete(message)
                else:
                    parsed.append((message, result))
            if not parsed:
                return self.counts
            try:
                claims = self.disrupter.claims_by_instance()
            except Exception:
                log.exception("listing NodeClaims failed; %d interruption messages left for redelivery", len(parsed))
                self.counts.left += len(parsed)
                return self.counts
            for message, event in parsed:
                key = event.event_id or message.message_id
                if key and key in self._events_done:
                    self.counts.duplicates += 1
                    self._delete(message)
                    continue
                done, acted = self.disrupter.act(event, claims, f"message {message.message_id}")
                self.counts.acted += acted
                if done:
                    if key:
                        self._events_done.add(key)
                    self._delete(message)
                else:
                    self.counts.left += 1
            return self.counts

    def _delete(self, message: QueueMessage) -> None:
        try:
            self.queue.delete(message)
            self.counts.deleted += 1
            self.metrics.interruption_deleted.inc()
            queued = seconds_since(_event_time(message.body))
            if queued is not None:
                self.metrics.interruption_queue_duration.observe(queued)
        except Exception:
            log.exception("deleting interruption message %s failed; it comes back and is then deleted as a duplicate",
                          message.message_id)  # fmt: skip
