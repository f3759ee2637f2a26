"""kube package."""
