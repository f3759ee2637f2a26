"""The leader's status refresh: NodePool and EC2NodeClass status kept current when no pod is pending.

Karpenter's NodePool and EC2NodeClass status controllers reconcile whether or not pods are pending. Here
the leader does, every `interval` seconds (60 by default), in a thread of its own: what a provisioning
round does before it schedules (activities.provisioning.status: what each EC2NodeClass's selectors
resolve to and its conditions, its finalizer, its termination once deleted; each NodePool's conditions;
a Warning Event for each new problem), writing only what changed. So status follows what no
pod event announces: a subnet tagged, an AMI released, an EC2NodeClass fixed or deleted.

It asks the provisioner for a round only when a pod is pending (a signal the pod watch could not send, or a
pod that fit nowhere last time and may fit now), or when the refresh failed (the round's `solve` does the
same work under Temporal's retries). An idle cluster's refresh costs the API server a few lists a minute
and Temporal nothing; as a provisioning round every minute it cost a signal, a timer and an activity,
4,320 billable actions a day.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class StatusRefresh:
    """See the module docstring. `refresh` brings the status up to date and raises when it could not;
    `pending_pods` counts the pods waiting for a node; `ask_round(count)` signals the provisioner."""

    def __init__(
        self,
        refresh: Callable[[], object],
        pending_pods: Callable[[], int],
        ask_round: Callable[[int], None],
        interval: float = 60.0,
    ) -> None:
        self.refresh = refresh
        self.pending_pods = pending_pods
        self.ask_round = ask_round
        self.interval = interval

    def run(self, stop: threading.Event) -> None:
        """Refresh every `interval` seconds until `stop` is set. Never raises."""
        while not stop.wait(self.interval):
            self.once()

    def once(self) -> bool:
        """Refresh once; whether a provisioning round was asked for."""
        try:
            self.refresh()
            pending = self.pending_pods()
        except Exception:
            log.exception("refreshing NodePool and EC2NodeClass status failed; asking the provisioner for a round")
            pending = 0
        else:
            if not pending:
                return False
        try:
            self.ask_round(pending)
        except Exception:
            log.exception("asking the provisioner for a round failed; retrying next interval")
        return True
