"""The garbage survey: the leader's look, every `garbage_collection_interval`, at what the garbage collector
would act on, so that the collector (workflows.garbage_collection) runs a round only when there is
something to collect.

Each look runs `GarbageCollectionActivities.survey` in the leader's process, outside any workflow: the
same checks as the collector's round (leaked instances, NodeClaims whose instance or Node is gone, stale
launch templates), acting on nothing, with NodeClaims, Nodes and EC2NodeClasses read from the leader's
watch cache. When it finds anything, it asks the collector for a round (`request`), which reads everything
again and acts; the survey is a trigger, never the judge. On a cluster with nothing to collect that costs
one DescribeInstances and one DescribeLaunchTemplates per look, as the collector's timer-driven rounds
did, and no Temporal action but the collector's hourly backstop round (the rounds cost 1,440 billable
actions a day at the default 2 minutes).
Anything found is collected within one interval, as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from activities.garbage_collection.collector import CollectInput, GarbageCollectionActivities
from activities.periodic import every
from kube.watch_cache import WatchCache

log = logging.getLogger(__name__)
SHOWN = 5  # findings named in the log line of a look


class GarbageSurvey:
    """Looks every `interval` seconds in the leader (see the module docstring); `look()` is one look, which
    returns what it found. Never raises out of `run`: a failed look is logged and the next one tries
    again."""

    def __init__(
        self,
        collector: GarbageCollectionActivities,
        request: Callable[[], None],
        min_age_seconds: int,
        interval: float,
        cache: WatchCache | None = None,
    ) -> None:
        self.collector = collector
        self.request = request
        self.inp = CollectInput(min_age_seconds=min_age_seconds)
        self.interval = interval
        self.cache = cache

    def run(self, stop: threading.Event) -> None:
        every(self.interval, stop, self.look, log, "garbage survey")

    def look(self) -> list[str]:
        """One look: what a collector round would act on now; a round is requested when it is not empty."""
        found = self.collector.survey(self.inp, self.cache)
        if found:
            more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
            log.info("garbage survey: %s%s; asking the garbage collector for a round", "; ".join(found[:SHOWN]), more)
            self.request()
        return found
