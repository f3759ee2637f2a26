"""The disruption controller's activities, as Karpenter's disruption controller: the decision
(decision: emptiness, drift and consolidation, decided by scheduling.disruption on a fresh read of the
cluster, snapshot), the execution of a command step by step (execution), manual replaces
(manual_replacement), the clearing of disruption marks nothing acts on (stale_marks) and the leader's look
ahead that wakes the controller only when a decision would find something (trigger)."""

__all__ = ["decision", "execution", "manual_replacement", "snapshot", "stale_marks", "trigger"]
