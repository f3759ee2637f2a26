"""The instance status checker: EC2 status checks and scheduled events -> disrupted NodeClaims.

Karpenter also acts, without an interruption queue, on what DescribeInstanceStatus says about the
instances it launched: an impaired instance or system status check, or a scheduled event (retirement,
maintenance, ...), is handled like an AWS Health scheduled change (the NodeClaim is deleted, so the node
is tainted, drained and terminated and its pods go back to provisioning). The leader runs one
`InstanceStatusChecker` in a thread (workers.worker `_lead`): every `interval_seconds` it reads the
statuses of the cluster's running instances (cloudprovider.aws.provider `instance_statuses`), finds the
problems (cloudprovider.aws.interruption.instance_status, pure) and acts through the interruption consumer's
`ClaimDisrupter` (activities.interruption.consumer): the same `delete` signal, reason and events, and a NodeClaim
the queue already disrupted is not signalled again.

A finding acted on (or with no NodeClaim to act on) is remembered by instance and problem, so it is
not logged again every interval; one whose signal failed is tried at the next check. A failed read is
logged and retried at the next check.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from activities.interruption.consumer import Bounded, ClaimDisrupter
from cloudprovider.aws.interruption.instance_status import scheduled_changes

log = logging.getLogger(__name__)

# The `InstanceStatuses` entries of the cluster's running instances (DescribeInstanceStatus). Blocking.
StatusReader = Callable[[], list[dict[str, Any]]]


class InstanceStatusChecker:
    """See the module docstring. `run(stop)` until `stop` is set; `check()` is one pass (tests call it)."""

    def __init__(self, read_statuses: StatusReader, disrupter: ClaimDisrupter, interval_seconds: float) -> None:
        if interval_seconds <= 0:
            raise ValueError(f"InstanceStatusChecker: interval_seconds must be positive, got {interval_seconds}")
        self.read_statuses = read_statuses
        self.disrupter = disrupter
        self.interval_seconds = interval_seconds
        self.acted = 0  # NodeClaims disrupted since built
        self._done = Bounded()

    def run(self, stop: threading.Event) -> None:
        """A check now, then every `interval_seconds`, until `stop`."""
        while not stop.is_set():
            self.check()
            stop.wait(self.interval_seconds)

    def check(self) -> int:
        """One pass: read, decide, act. Returns how many NodeClaims it disrupted. Never raises."""
        try:
            statuses: list[Mapping[str, Any]] = list(self.read_statuses())
        except Exception:
            log.exception("reading the instances' EC2 status failed; trying again at the next check")
            return 0
        findings = [f for f in scheduled_changes(statuses) if f.event_id not in self._done]
        if not findings:
            return 0
        try:
            claims = self.disrupter.claims_by_instance()
        except Exception:
            log.exception("listing NodeClaims failed; %d status findings wait for the next check", len(findings))
            return 0
        acted = 0
        for finding in findings:
            done, count = self.disrupter.act(finding, claims, "EC2 instance status check")
            acted += count
            if done:
                self._done.add(finding.event_id)
        self.acted += acted
        return acted
