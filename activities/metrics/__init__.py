"""Karpenter's Prometheus metrics, with Karpenter's names, types and labels: the worker's one `Metrics`
object (registry) and its parts (cluster_state, disruption, status_conditions, summary), the label values
taken from Kubernetes objects (labels), what a NodeClaim's termination records (termination) and the cloud
provider timed and counted per call (metered_cloud); the leader's cluster-state refresh sets the cluster
gauges (cluster_refresh) and the status-condition metrics (condition_readings) from its watch cache."""

__all__ = [
    "cluster_refresh",
    "cluster_state",
    "condition_readings",
    "disruption",
    "labels",
    "metered_cloud",
    "registry",
    "status_conditions",
    "summary",
    "termination",
]
