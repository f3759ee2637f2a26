"""What a pod asks of a node, as the kube-scheduler and Karpenter read it, each as a small algebra the
solver and the disruption simulation share: node selector requirements as sets of allowed label values
(requirements), taints and tolerations (taints), topology spread and pod (anti-)affinity as counts per
domain (topology), and effective resource requests and host ports (resources)."""

__all__ = ["requirements", "resources", "taints", "topology"]
