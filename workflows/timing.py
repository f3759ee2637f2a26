"""Timing policies of the workflows, in one place."""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

from apis.nodeclaim import LAUNCH_FAILED

# Activities retry forever with capped backoff: the cloud or the API server coming back is the normal case.
ACTIVITY_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                             maximum_interval=timedelta(seconds=30))  # fmt: skip
LAUNCH_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=30,
    non_retryable_error_types=[LAUNCH_FAILED],
)
# Short activities are single API round trips: a worker killed during one is noticed after this long.
SHORT_ACTIVITY = timedelta(seconds=30)
# Long activities heartbeat (activities.heartbeat); a dead worker is noticed after HEARTBEAT.
HEARTBEAT = timedelta(seconds=10)
LAUNCH_ATTEMPT = timedelta(minutes=2)
LAUNCH_TIMEOUT = timedelta(minutes=10)
DRAIN_STEP = timedelta(minutes=2)
SOLVE = timedelta(minutes=5)

# Registration and initialization wake on the Node watch's `node_changed` signal; these timers are the
# backstop for a signal the watch missed (first after NODE_WAIT_FIRST, doubling up to NODE_WAIT_MAX).
NODE_WAIT_FIRST = timedelta(seconds=5)
NODE_WAIT_MAX = timedelta(minutes=1)
DRAIN_POLL = timedelta(seconds=2)
TERMINATE_POLL = timedelta(seconds=2)
MAX_HISTORY_EVENTS = 2000

BATCH_IDLE = timedelta(seconds=1)
BATCH_MAX = timedelta(seconds=10)
MAX_SIGNALS_PER_RUN = 2000
