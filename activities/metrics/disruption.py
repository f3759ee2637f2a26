"""The disruption controller's metrics, part of the worker's one `Metrics` (activities.metrics.registry): its
decisions, the nodes each reason could take, the budgets' allowances, validations, rolled-back commands,
timeouts, and the Balanced policy's moves and scores. Recorded by the disruption activities
(activities.disruption.decision, activities.disruption.execution) from each decision, the controller's and the
leader's look ahead alike."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Karpenter's buckets of the Balanced consolidation score (approved at 0.5).
SCORE_BUCKETS = (0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0)


class DisruptionMetrics:
    """The disruption controller's metrics, registered on `reg`."""

    def __init__(self, reg: CollectorRegistry, duration_buckets: tuple[float, ...]) -> None:
        self.nodepools_allowed_disruptions = Gauge(
            "karpenter_nodepools_allowed_disruptions",
            "The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. "
            "Labeled by nodepool and reason.",
            ["nodepool", "reason"],
            registry=reg,
        )
        self.nodepools_nodes_consuming_budgets = Gauge(
            "karpenter_nodepools_nodes_consuming_budgets",
            "The number of nodes consuming the budget of a nodepool at a point in time. Labeled by nodepool and "
            "reason.",
            ["nodepool", "reason"],
            registry=reg,
        )
        self.disruption_decisions = Counter(
            "karpenter_voluntary_disruption_decisions",
            "Number of disruption decisions performed. Labeled by disruption decision, reason and consolidation type.",
            ["decision", "reason", "consolidation_type"],
            registry=reg,
        )
        self.disruption_decisions_by_nodepool = Counter(
            "karpenter_voluntary_disruption_decisions_by_nodepool",
            "Number of disruption decisions performed by nodepool. Labeled by nodepool name, disruption decision, "
            "reason, and consolidation type.",
            ["nodepool", "decision", "reason", "consolidation_type"],
            registry=reg,
        )
        self.disruption_eligible_nodes = Gauge(
            "karpenter_voluntary_disruption_eligible_nodes",
            "Number of nodes eligible for disruption by nodeflow. Labeled by disruption reason.",
            ["reason"],
            registry=reg,
        )
        self.disruption_evaluation_duration = Histogram(
            "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
            "Duration of the disruption decision evaluation process in seconds. Labeled by method and consolidation "
            "type (nodeflow evaluates every method in one pass: method `all`).",
            ["method", "consolidation_type"],
            buckets=duration_buckets,
            registry=reg,
        )
        # No Karpenter counterpart (Karpenter skips a consolidated cluster without counting it).
        self.disruption_settled_looks = Counter(
            "nodeflow_disruption_settled_looks",
            "Number of the leader's disruption look aheads that decided nothing because the cluster was settled: "
            "unchanged since passes that found no command, and no time-driven change due.",
            registry=reg,
        )
        self.disruption_failed_validations = Counter(
            "karpenter_voluntary_disruption_failed_validations",
            "Number of disruption commands that were decided but failed validation. Labeled by consolidation type.",
            ["consolidation_type"],
            registry=reg,
        )
        self.disruption_queue_failures = Counter(
            "karpenter_voluntary_disruption_queue_failures",
            "The number of times that an executed disruption command failed (its replacements did not come up) and "
            "was rolled back. Labeled by decision, reason and consolidation type.",
            ["decision", "reason", "consolidation_type"],
            registry=reg,
        )
        self.consolidation_timeouts = Counter(
            "karpenter_voluntary_disruption_consolidation_timeouts",
            "Number of times the consolidation algorithm has reached a timeout. Labeled by consolidation type.",
            ["consolidation_type"],
            registry=reg,
        )
        self.consolidation_moves = Counter(
            "karpenter_consolidation_moves",
            "Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
            ["decision", "nodepool", "policy"],
            registry=reg,
        )
        self.consolidation_score = Histogram(
            "karpenter_consolidation_score",
            "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
            ["decision", "nodepool", "policy"],
            buckets=SCORE_BUCKETS,
            registry=reg,
        )
