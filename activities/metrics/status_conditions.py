"""Karpenter's status-condition metrics of one kind of object (`operator_<kind>_status_condition_*`): one
ConditionMetrics per kind on the worker's Metrics (activities.metrics.registry);
activities.metrics.condition_readings sets them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# The kinds of object whose status conditions Karpenter's operator metrics describe, as its names spell them.
CONDITION_KINDS = ("nodeclaim", "nodepool", "node", "ec2nodeclass")
# Seconds a status condition held, from a launch's seconds to a node's weeks.
CONDITION_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
                     604800.0)  # fmt: skip


class ConditionMetrics:
    """The status-condition metrics of one kind of object (`kind`: one of CONDITION_KINDS), named as
    Karpenter's operator exports them (`operator_<kind>_status_condition_*`): per object and condition its
    `count` (1) and `current_status_seconds`; per condition type its `transitions` and
    `transition_seconds` (how long the status it left had held)."""

    def __init__(self, kind: str, registry: CollectorRegistry) -> None:
        prefix = f"operator_{kind}_status_condition"
        per_object = ["namespace", "name", "type", "status", "reason"]
        self.count = Gauge(
            f"{prefix}_count",
            "The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0",
            per_object,
            registry=registry,
        )
        self.current_status_seconds = Gauge(
            f"{prefix}_current_status_seconds",
            "The current amount of time in seconds that a status condition has been in a specific state.",
            per_object,
            registry=registry,
        )
        self.transitions = Counter(
            f"{prefix}_transitions",
            "The count of transitions of a given object, type and status (the status left, and its reason).",
            ["type", "status", "reason"],
            registry=registry,
        )
        self.transition_seconds = Histogram(
            f"{prefix}_transition_seconds",
            "The amount of time a condition was in a given state (status) before transitioning to another state "
            "(to_status).",
            ["type", "status", "to_status"],
            buckets=CONDITION_BUCKETS,
            registry=registry,
        )

    def gauges(self) -> tuple[Gauge, Gauge]:
        return self.count, self.current_status_seconds
