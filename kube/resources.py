"""The Kubernetes resources nodeflow reads and writes, by kind. Pure data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path, e.g. /api/v1/namespaces/ns/pods/p/eviction or /apis/karpenter.sh/v1/nodeclaims."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


POD = Resource("", "v1", "pods", "Pod", True)
NODE = Resource("", "v1", "nodes", "Node", False)
EVENT = Resource("", "v1", "events", "Event", True)
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", False)
PVC = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
PV = Resource("", "v1", "persistentvolumes", "PersistentVolume", False)
DEPLOYMENT = Resource("apps", "v1", "deployments", "Deployment", True)
REPLICASET = Resource("apps", "v1", "replicasets", "ReplicaSet", True)
DAEMONSET = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
STATEFULSET = Resource("apps", "v1", "statefulsets", "StatefulSet", True)
PDB = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)
STORAGECLASS = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
VOLUMEATTACHMENT = Resource("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False)
RUNTIMECLASS = Resource("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False)
NODEPOOL = Resource("karpenter.sh", "v1", "nodepools", "NodePool", False)
NODECLAIM = Resource("karpenter.sh", "v1", "nodeclaims", "NodeClaim", False)
EC2NODECLASS = Resource("karpenter.k8s.aws", "v1", "ec2nodeclasses", "EC2NodeClass", False)
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)

ALL: tuple[Resource, ...] = (
    POD,
    NODE,
    EVENT,
    NAMESPACE,
    PVC,
    PV,
    DEPLOYMENT,
    REPLICASET,
    DAEMONSET,
    STATEFULSET,
    PDB,
    STORAGECLASS,
    VOLUMEATTACHMENT,
    RUNTIMECLASS,
    NODEPOOL,
    NODECLAIM,
    EC2NODECLASS,
    LEASE,
)
BY_KIND: dict[str, Resource] = {r.kind: r for r in ALL}
