"""The pod binder of the local stack: binds pending pods to nodes they fit, like kube-scheduler."""

from devstack.binder.binder import PodBinder

__all__ = ["PodBinder"]
