"""Karpenter's Prometheus metrics, with Karpenter's names, types and labels: the worker's one `Metrics`
object (registry) and its parts (cluster_state, disruption, status_conditions, summary), the label values
taken from Kubernetes objects (labels), what a NodeClaim's termination records (termination) and the cloud
provider timed and counted per call (metered_cloud)."""

__all__ = [
    "cluster_state",
    "disruption",
    "labels",
    "metered_cloud",
    "registry",
    "status_conditions",
    "summary",
    "termination",
]
