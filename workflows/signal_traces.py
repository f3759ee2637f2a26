"""Trace segments of a long-lived workflow: the work a signal asked for continues that signal's trace.

The provisioner runs for days and does its work in rounds, each asked for by signals. With the worker's
tracing on (workers.tracing), a round belongs in the trace of the signal that asked for it (the pod
watcher's), not in the provisioner run's own trace, which would grow without end. The worker's workflow
interceptor records, per signal name, the trace context of the first signal received since that name was
last taken, and puts itself on the OpenTelemetry context of each workflow it runs under SIGNAL_TRACES.
`traced_by(signal)` takes that context and runs its block under it: the activities the block starts, and
what they start in turn, are spans of the signal's trace. With no traced signal since the last take, the
block runs in the workflow's own trace; with tracing off there is nothing on the context, and the block
runs as is. `untraced` keeps a workflow's own trace from following it across continue-as-new.

Nothing here issues a command, so a workflow's history is the same with tracing on or off, and spans are
recorded only outside replay (the SDK's rule for workflow spans).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, cast

from opentelemetry.context import Context, attach, detach, get_current, get_value
from opentelemetry.trace import INVALID_SPAN, set_span_in_context

# A fixed string rather than `create_key`'s generated one: the key stays the same should a sandbox
# re-import this module (nodeflow's workflows are not sandboxed).
SIGNAL_TRACES = "nodeflow-signal-traces"


class SignalTraces(Protocol):
    """What the worker's tracing puts on a workflow's OpenTelemetry context under SIGNAL_TRACES."""

    def take(self, signal: str) -> Context | None:
        """The current context continued in the trace of the first `signal` received since the last take of
        `signal`, and forget that signal; None when no such signal carried a trace."""


@contextmanager
def traced_by(signal: str) -> Iterator[None]:
    """Run the block in the trace of the first `signal` received since the previous `traced_by(signal)`
    (module docstring). Call it from the workflow's own code, not from a handler."""
    traces = get_value(SIGNAL_TRACES)
    context = cast(SignalTraces, traces).take(signal) if traces is not None else None
    with _attached(context):
        yield


@contextmanager
def untraced() -> Iterator[None]:
    """Run the block outside any trace, the context's other values kept. A continue-as-new under it starts
    the next run with no trace of its own, where the SDK would carry the run's trace to it, and so on for
    the workflow's whole life; that run's work is still traced where `traced_by` finds a signal's trace."""
    context = set_span_in_context(INVALID_SPAN, get_current()) if get_value(SIGNAL_TRACES) is not None else None
    with _attached(context):
        yield


@contextmanager
def _attached(context: Context | None) -> Iterator[None]:
    """The block under `context` (None: as is)."""
    if context is None:
        yield
        return
    token = attach(context)
    try:
        yield
    finally:
        # An evicted workflow's coroutine may be closed from another context, where the token is not
        # valid and there is nothing to detach.
        if get_current() is context:
            detach(token)
