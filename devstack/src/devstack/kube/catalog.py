"""The resources the emulated API server serves, with the discovery facts kubectl needs.

Built on ``kube.resources`` (group/version/plural/kind/scope) and adds what discovery documents
carry: singular name, short names, categories, verbs and subresources. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass

from kube import resources as kr

_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ServedResource:
    """One served collection, e.g. ``v1 pods`` or ``karpenter.sh/v1 nodeclaims``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    builtin: bool = True  # False for custom resources (no strategic merge patch, like the real API)
    served_verbs: tuple[str, ...] = _ALL_VERBS  # create only for the access reviews (never stored)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def key(self) -> str:
        """Stable identifier, e.g. ``apps/v1/deployments`` or ``v1/pods``."""
        return f"{self.api_version}/{self.plural}"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def verbs(self) -> tuple[str, ...]:
        return self.served_verbs


def _from(
    res: kr.Resource,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    subresources: tuple[str, ...] = (),
    builtin: bool = True,
) -> ServedResource:
    return ServedResource(
        res.group,
        res.version,
        res.plural,
        res.kind,
        res.namespaced,
        short_names,
        categories,
        subresources,
        builtin,
    )


_ALL = ("all",)
_KARPENTER = ("karpenter",)

POD = _from(kr.POD, ("po",), _ALL, ("status", "eviction", "binding"))
NODE = _from(kr.NODE, ("no",), (), ("status",))
EVENT = _from(kr.EVENT, ("ev",))
NAMESPACE = _from(kr.NAMESPACE, ("ns",), (), ("status",))
PVC = _from(kr.PVC, ("pvc",), (), ("status",))
PV = _from(kr.PV, ("pv",), (), ("status",))
DEPLOYMENT = _from(kr.DEPLOYMENT, ("deploy",), _ALL, ("status", "scale"))
REPLICASET = _from(kr.REPLICASET, ("rs",), _ALL, ("status", "scale"))
DAEMONSET = _from(kr.DAEMONSET, ("ds",), _ALL, ("status",))
STATEFULSET = _from(kr.STATEFULSET, ("sts",), _ALL, ("status", "scale"))
PDB = _from(kr.PDB, ("pdb",), (), ("status",))
STORAGECLASS = _from(kr.STORAGECLASS, ("sc",))
VOLUMEATTACHMENT = _from(kr.VOLUMEATTACHMENT, (), (), ("status",))
RUNTIMECLASS = _from(kr.RUNTIMECLASS)
NODEPOOL = _from(kr.NODEPOOL, (), _KARPENTER, ("status",), builtin=False)
NODECLAIM = _from(kr.NODECLAIM, (), _KARPENTER, ("status",), builtin=False)
EC2NODECLASS = _from(kr.EC2NODECLASS, ("ec2nc", "ec2ncs"), _KARPENTER, ("status",), builtin=False)
LEASE = _from(kr.LEASE)
# Stored and served so `kubectl apply -f deploy/crds/` works; the store defaults custom resources from
# their schemas (see devstack.kube.defaulting). Which custom resources are served stays fixed (above).
CRD = ServedResource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    False,
    ("crd", "crds"),
    ("api-extensions",),
    ("status",),
)
SERVICEACCOUNT = ServedResource("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",))
# RBAC (rbac.authorization.k8s.io/v1), stored like any object; the emulator authorizes with them when it
# authenticates (see devstack.kube.access). The access reviews are answered, never stored.
_RBAC = "rbac.authorization.k8s.io"
CLUSTERROLE = ServedResource(_RBAC, "v1", "clusterroles", "ClusterRole", False)
CLUSTERROLEBINDING = ServedResource(_RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False)
ROLE = ServedResource(_RBAC, "v1", "roles", "Role", True)
ROLEBINDING = ServedResource(_RBAC, "v1", "rolebindings", "RoleBinding", True)
_AUTHZ = "authorization.k8s.io"
SELFSUBJECTACCESSREVIEW = ServedResource(
    _AUTHZ, "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, served_verbs=("create",)
)
SELFSUBJECTRULESREVIEW = ServedResource(
    _AUTHZ, "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, served_verbs=("create",)
)
REVIEWS = (SELFSUBJECTACCESSREVIEW, SELFSUBJECTRULESREVIEW)

SERVED: tuple[ServedResource, ...] = (
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
    CRD,
    SERVICEACCOUNT,
    CLUSTERROLE,
    CLUSTERROLEBINDING,
    ROLE,
    ROLEBINDING,
    SELFSUBJECTACCESSREVIEW,
    SELFSUBJECTRULESREVIEW,
)
_BY_PATH: dict[tuple[str, str, str], ServedResource] = {(r.group, r.version, r.plural): r for r in SERVED}


def lookup(group: str, version: str, plural: str) -> ServedResource | None:
    """The served resource at ``/apis/<group>/<version>/<plural>`` (group "" = core), or None."""
    return _BY_PATH.get((group, version, plural))


_BY_KIND: dict[tuple[str, str], ServedResource] = {(r.api_version, r.kind): r for r in SERVED}


def lookup_kind(api_version: str, kind: str) -> ServedResource | None:
    """The served resource of objects of `kind` in `api_version` (e.g. "karpenter.sh/v1", "NodeClaim"), or None."""
    return _BY_KIND.get((api_version, kind))


def group_versions() -> list[tuple[str, str]]:
    """Every non-core (group, version) served, in catalog order without duplicates."""
    seen: list[tuple[str, str]] = []
    for r in SERVED:
        if r.group and (r.group, r.version) not in seen:
            seen.append((r.group, r.version))
    return seen
