"""The names of every signal and query the workflows handle, defined once: the handlers' decorators and
every sender (the workflows, the worker's starter and watchers, the command line, the benchmarks and the
tests) use these members, never the bare string (tests/unit/test_message_names.py enforces it).

Each member is a `StrEnum`, so it is the wire name itself: what an operator types (`temporal workflow
signal --workflow-id nodeclaim-<name> --name drain`) and what the stored histories carry. Renaming a
member is free; changing its value breaks both.

The activities cannot import the workflows (the import contracts): they ask the worker's starter by
intent (activities.nodeclaim.sweep.ClaimSignaller, activities.disruption.execution.ClaimSignaller), and
the starter (workers.temporal.starter) maps the intent to a member here.
"""

from __future__ import annotations

from enum import StrEnum


class NodeClaimSignal(StrEnum):
    """The NodeClaim workflow's signals (workflows.nodeclaim); each takes an optional reason string."""

    DELETE = "delete"
    NODE_CHANGED = "node_changed"
    DRAIN = "drain"
    REPAIR = "repair"
    EXPIRE = "expire"
    REPLACE = "replace"
    CHECK_DRIFT = "check_drift"


class ProvisionerSignal(StrEnum):
    """The provisioner's signal (workflows.provisioner): pending pods seen, and the batch window."""

    PODS_PENDING = "pods_pending"


class DisruptionSignal(StrEnum):
    """The disruption controller's signals (workflows.disruption)."""

    CONFIGURE = "configure"
    REPLACE = "replace"
    WAKE = "wake"
    REPLACEMENT_READY = "replacement_ready"


class GarbageCollectorSignal(StrEnum):
    """The garbage collector's signals (workflows.garbage_collection)."""

    COLLECT = "collect"
    CONFIGURE = "configure"


class Query(StrEnum):
    """The queries: every long-lived workflow answers `status` with its state."""

    STATUS = "status"


SIGNALS: tuple[type[StrEnum], ...] = (NodeClaimSignal, ProvisionerSignal, DisruptionSignal, GarbageCollectorSignal)
QUERIES: tuple[type[StrEnum], ...] = (Query,)

__all__ = [
    "QUERIES",
    "SIGNALS",
    "DisruptionSignal",
    "GarbageCollectorSignal",
    "NodeClaimSignal",
    "ProvisionerSignal",
    "Query",
]
