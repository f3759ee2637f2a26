"""The unavailable-offerings cache: (instance type, zone, capacity type) triples the cloud recently refused.

After an insufficient-capacity error the offering is skipped for `ttl` (Karpenter uses 3 minutes), so the
next launch picks another type or zone. Pure and thread-safe; time comes from the injected `clock`
(seconds, monotonic).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta

from apis.instancetype import InstanceType
from cloudprovider.errors import UnavailableOffering

OfferingKey = tuple[str, str, str]


class UnavailableOfferings:
    """A TTL cache of refused offerings. Marking an offering again extends its expiry."""

    def __init__(self, ttl: timedelta = timedelta(minutes=3), clock: Callable[[], float] = time.monotonic) -> None:
        if ttl <= timedelta(0):
            raise ValueError(f"UnavailableOfferings: ttl must be positive, got {ttl}")
        self._ttl = ttl.total_seconds()
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[OfferingKey, tuple[float, UnavailableOffering]] = {}

    def mark(
        self, instance_type: str, zone: str, capacity_type: str, reason: str = "InsufficientInstanceCapacity"
    ) -> None:
        """Record that this offering was refused now."""
        offering = UnavailableOffering(instance_type, zone, capacity_type, reason)
        with self._lock:
            self._entries[(instance_type, zone, capacity_type)] = (self._clock() + self._ttl, offering)

    def mark_all(self, offerings: Iterable[UnavailableOffering]) -> None:
        for o in offerings:
            self.mark(o.instance_type, o.zone, o.capacity_type, o.reason)

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        """True while a mark for this offering has not expired."""
        with self._lock:
            entry = self._entries.get((instance_type, zone, capacity_type))
            if entry is None:
                return False
            if entry[0] <= self._clock():
                del self._entries[(instance_type, zone, capacity_type)]
                return False
            return True

    def snapshot(self) -> list[UnavailableOffering]:
        """The offerings unavailable right now, sorted by (type, zone, capacity type); expired ones dropped."""
        now = self._clock()
        with self._lock:
            for key in [k for k, (expiry, _) in self._entries.items() if expiry <= now]:
                del self._entries[key]
            return [self._entries[key][1] for key in sorted(self._entries)]

    def applied_to(self, types: Iterable[InstanceType]) -> list[InstanceType]:
        """`types` with the offerings unavailable right now marked `available: False`. A type none of whose
        offerings is refused is the same object (what the solver's option cache, scheduling.provisioning.catalog, knows
        it by); only the others are copied."""
        refused = {(o.instance_type, o.zone, o.capacity_type) for o in self.snapshot()}
        out = []
        for it in types:
            if refused and any((it.name, o.zone, o.capacity_type) in refused for o in it.offerings):
                offerings = [
                    o.model_copy(update={"available": False}) if (it.name, o.zone, o.capacity_type) in refused else o
                    for o in it.offerings
                ]
                it = it.model_copy(update={"offerings": offerings})
            out.append(it)
        return out

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
