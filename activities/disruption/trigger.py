"""The disruption trigger: the leader's look ahead for the disruption controller (workflows.disruption).

Karpenter's disruption controller decides every 10 s in memory. nodeflow's controller is a workflow, so
deciding there every 10 s costs a timer and an activity each time (17,280 billable Temporal actions a
day on an idle cluster). Instead the leader decides every `interval` seconds here, outside any workflow,
with the same code as the controller's `decide_disruption` activity (activities.disruption.decision `look_ahead`:
a fresh snapshot, the Consolidatable conditions, events and metrics published as the activity does), and
sends the controller `wake` only when the decision is news. A look finds no news without deciding while
the cluster is settled, as Karpenter skips a consolidated cluster: unchanged since passes that found no
command, with no time-driven change due (scheduling.disruption.settled). Otherwise news is:

- its finding differs from the last one this trigger announced: the command (method, action,
  candidates) and whether it executes, or, without one, which kinds of rejection there are. Not how many
  nodes each rejection holds: in a large cluster a pass cut short by its time limit judges a different
  number of nodes each time, and those counts would make every look news. Or
- it has a command to execute and no wake was sent for RESIGNAL_SECONDS (the controller may have
  judged the same cluster a moment earlier and found nothing; it is woken again, not left to its
  backstop).

The controller then decides again itself, validates and acts, and records the decision in its history;
the trigger only says when. The wake is a signal-with-start, so a controller terminated by hand is started
again. A wake that fails is retried at the next look (the summary is remembered only once sent). The
first look after leadership is taken always wakes. Without a leader, or while the look keeps failing,
the controller still decides at its own hourly backstop (workflows.disruption IDLE_BACKSTOP).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from activities.disruption.decision import DecideInput, DisruptionRound, LookAhead

log = logging.getLogger(__name__)
RESIGNAL_SECONDS = 60.0


class DisruptionTrigger:
    """See the module docstring. `decide` evaluates without acting, given and returning what the looks
    found (DisruptionActivities.look_ahead; its decision None when the cluster is settled); `wake` signals
    the controller and raises when it could not."""

    def __init__(
        self,
        decide: Callable[[DecideInput, LookAhead | None], tuple[DisruptionRound | None, LookAhead | None]],
        wake: Callable[[], None],
        settings: DecideInput,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.decide = decide
        self.wake = wake
        self.settings = settings
        self.interval = interval
        self.clock = clock
        self.announced: tuple[object, ...] | None = None  # the finding the controller was last woken for
        self.woken_at: float | None = None
        self.single_node_first: list[str] = []
        self.memory: LookAhead | None = None  # what the looks of this term found (none yet)

    def run(self, stop: threading.Event) -> None:
        """Look now, then every `interval` seconds until `stop` is set. Never raises."""
        while not stop.is_set():
            self.look()
            stop.wait(self.interval)

    def look(self) -> bool:
        """Decide once and wake the controller if the decision is news; whether it was woken."""
        inp = self.settings.model_copy(update={"single_node_first": self.single_node_first})
        try:
            decided, self.memory = self.decide(inp, self.memory)
        except Exception:
            log.exception("disruption look ahead failed; the next look retries (the controller's backstop is hourly)")
            return False
        if decided is None:  # settled: what the last decisions found still holds
            return False
        self.single_node_first = decided.single_node_skipped
        found = finding(decided)
        now = self.clock()
        overdue = self.woken_at is None or now - self.woken_at >= RESIGNAL_SECONDS
        if found == self.announced and not (decided.executable and overdue):
            return False
        try:
            self.wake()
        except Exception as err:
            log.warning("waking the disruption controller failed (the next look retries): %s", err)
            return False
        self.announced, self.woken_at = found, now
        log.debug("disruption controller woken: %s", decided.summary())
        return True


def finding(decided: DisruptionRound) -> tuple[object, ...]:
    """What makes a decision news when it changes (see the module docstring)."""
    command = decided.command
    if command is None:
        return ("rejected", *sorted(decided.rejections))
    return (command.method, command.action, *decided.candidate_names(), decided.executable)
