"""The simulated kubelet of the local stack: Nodes for the cluster's EC2 instances, and their pods."""

from devstack.kubelet.kubelet import SimulatedKubelet

__all__ = ["SimulatedKubelet"]
