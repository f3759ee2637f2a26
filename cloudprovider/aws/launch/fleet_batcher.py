"""Concurrent launches of the same shape go out as one CreateFleet, as Karpenter's CreateFleet batcher does.

Launch activities run on a worker's thread pool; each builds its instant CreateFleet request and hands it
to `FleetBatcher.create_fleet`. Requests whose `shape_key` is equal (everything but the client token and
the per-claim tags `Name` and `karpenter.sh/nodeclaim`) that arrive while a window is open join it. A
window closes when no request joined for `idle_seconds` (Karpenter: 35 ms) or `max_seconds` after it
opened (Karpenter: 1 s), or when it holds `max_batch` requests; its requests are then sent:

- one request: as it was built, client token and every tag included (nothing changes for a lone launch);
- several: one CreateFleet with their summed `TotalTargetCapacity`, the shared tags only and a client
  token derived from the callers' tokens (`batch_token`). The instances are handed out one per caller in
  arrival order, and each caller's instance then gets its per-claim tags with CreateTags before the caller
  sees it, so `InstanceQueries.live(claim)` finds it as it finds a lone launch's. Callers left without an
  instance (a partial fulfilment) get the fleet's `Errors`, e.g. InsufficientInstanceCapacity.

Each caller gets a CreateFleet response of its own (`split`): its one instance, or none, with the fleet's
errors; a call that raises raises in every caller. The volumes of a batched launch carry the shared tags
only, as Karpenter's (its tagging controller tags the instance alone).

A retried activity stays idempotent the way a lone launch is: the launcher first looks for an instance
tagged with its claim. Only a crash between the batched CreateFleet and the CreateTags leaves an instance
without the claim tag.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cloudprovider.errors import CloudProviderError
from cloudprovider.types import TAG_NAME, TAG_NODECLAIM

IDLE_SECONDS = 0.035
MAX_SECONDS = 1.0
MAX_BATCH = 1000
PER_CLAIM_TAGS: tuple[str, ...] = (TAG_NAME, TAG_NODECLAIM)


@dataclass
class Window:
    """When a batch that opened at `opened` and last grew at `last` closes: `idle` seconds after it last
    grew, but no later than `maximum` seconds after it opened."""

    opened: float
    idle: float
    maximum: float
    last: float = field(default=-1.0)

    def __post_init__(self) -> None:
        if self.last < self.opened:
            self.last = self.opened

    def grew(self, now: float) -> None:
        self.last = max(self.last, now)

    def closes_at(self) -> float:
        return min(self.last + self.idle, self.opened + self.maximum)


def _without_per_claim_tags(specs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**spec, "Tags": [t for t in spec.get("Tags", []) if t.get("Key") not in PER_CLAIM_TAGS]} for spec in specs]


def shape_key(request: dict[str, Any]) -> str:
    """What two CreateFleet requests must share to go out as one: all but ClientToken and the per-claim tags."""
    shape = {k: v for k, v in request.items() if k != "ClientToken"}
    shape["TagSpecifications"] = _without_per_claim_tags(request.get("TagSpecifications", []))
    return json.dumps(shape, sort_keys=True, default=str)


def per_claim_tags(request: dict[str, Any]) -> list[dict[str, str]]:
    """The per-claim tags the request puts on its instance."""
    for spec in request.get("TagSpecifications", []):
        if spec.get("ResourceType") == "instance":
            return [t for t in spec.get("Tags", []) if t.get("Key") in PER_CLAIM_TAGS]
    return []


def batch_token(tokens: Sequence[str]) -> str:
    """The client token of a batch: the same callers give the same token (at most 64 characters, as EC2 takes)."""
    return hashlib.sha256("\n".join(sorted(tokens)).encode()).hexdigest()


def shared_request(request: dict[str, Any], count: int, token: str) -> dict[str, Any]:
    """`request` for `count` instances, with the shared tags only and client token `token`."""
    capacity = {**request["TargetCapacitySpecification"], "TotalTargetCapacity": count}
    return {
        **request,
        "ClientToken": token,
        "TargetCapacitySpecification": capacity,
        "TagSpecifications": _without_per_claim_tags(request.get("TagSpecifications", [])),
    }


def split(response: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """One CreateFleet response per caller: the fleet's instances one each in order (each in its launch
    group, with that group's overrides), none for the callers past the last; every one keeps the fleet's
    `Errors`."""
    instances = [
        {**group, "InstanceIds": [instance_id]}
        for group in response.get("Instances", [])
        for instance_id in group.get("InstanceIds", [])
    ]
    errors = response.get("Errors", [])
    return [{"Instances": instances[i : i + 1], "Errors": errors} for i in range(count)]


@dataclass(eq=False)
class _Entry:
    request: dict[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    response: dict[str, Any] | None = None
    error: BaseException | None = None


@dataclass(eq=False)
class _Batch:
    window: Window
    entries: list[_Entry] = field(default_factory=list)
    closed: bool = False


class FleetBatcher:
    """Thread-safe; see the module docstring. `create_fleet` and `create_tags` make the calls (with
    `cloudprovider.aws.errors.call` around them); `observe` is told each batch's size, and how long its
    window was open (from its first request until it closed), once sent."""

    def __init__(
        self,
        create_fleet: Callable[..., dict[str, Any]],
        create_tags: Callable[..., Any],
        *,
        idle_seconds: float = IDLE_SECONDS,
        max_seconds: float = MAX_SECONDS,
        max_batch: int = MAX_BATCH,
        clock: Callable[[], float] = time.monotonic,
        observe: Callable[[int, float], None] | None = None,
    ) -> None:
        if idle_seconds < 0 or max_seconds < 0 or max_batch < 1:
            raise ValueError(
                f"FleetBatcher: need idle_seconds >= 0, max_seconds >= 0 and max_batch >= 1, got "
                f"{idle_seconds}, {max_seconds}, {max_batch}"
            )
        self._create_fleet = create_fleet
        self._create_tags = create_tags
        self._idle = idle_seconds
        self._max = max_seconds
        self._max_batch = max_batch
        self._clock = clock
        self._observe = observe
        self._cond = threading.Condition()
        self._open: dict[str, _Batch] = {}

    def create_fleet(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send `request` (an instant CreateFleet for one instance), alone or in a batch; this caller's
        response (see `split`). Raises what the CreateFleet call (or this caller's CreateTags) raised."""
        key = shape_key(request)
        entry = _Entry(request)
        with self._cond:
            now = self._clock()
            batch = self._open.get(key)
            leads = batch is None
            if batch is None:
                batch = self._open[key] = _Batch(Window(now, self._idle, self._max))
            else:
                batch.window.grew(now)
            batch.entries.append(entry)
            if len(batch.entries) >= self._max_batch:
                self._close(key, batch)
            self._cond.notify_all()
        if leads:
            self._lead(key, batch)
        entry.done.wait()
        if entry.error is not None:
            raise entry.error
        assert entry.response is not None
        return entry.response

    def _close(self, key: str, batch: _Batch) -> None:
        batch.closed = True
        if self._open.get(key) is batch:
            del self._open[key]

    def _lead(self, key: str, batch: _Batch) -> None:
        with self._cond:
            while not batch.closed:
                remaining = batch.window.closes_at() - self._clock()
                if remaining <= 0:
                    self._close(key, batch)
                    break
                self._cond.wait(remaining)
            window = self._clock() - batch.window.opened
        try:
            self._send(batch.entries, window)
        finally:
            for entry in batch.entries:
                if entry.response is None and entry.error is None:
                    entry.error = CloudProviderError("CreateFleet batch ended without an answer", retryable=True)
                entry.done.set()

    def _send(self, entries: list[_Entry], window: float) -> None:
        try:
            if len(entries) == 1:
                entries[0].response = self._create_fleet(**entries[0].request)
                return
            token = batch_token([str(e.request.get("ClientToken", "")) for e in entries])
            request = shared_request(entries[0].request, len(entries), token)
            shares = split(self._create_fleet(**request), len(entries))
        except BaseException as error:
            for entry in entries:
                entry.error = error
            raise
        finally:
            if self._observe is not None:
                self._observe(len(entries), window)
        for entry, share in zip(entries, shares, strict=True):
            ids = [i for group in share["Instances"] for i in group["InstanceIds"]]
            tags = per_claim_tags(entry.request)
            if ids and tags:
                try:
                    self._create_tags(Resources=ids, Tags=tags)
                except CloudProviderError as error:
                    entry.error = error
                    continue
            entry.response = share
