"""Who talks to the stack's Kubernetes API emulator, and what the worker may do there.

- `Identities.new(namespace, service_account)`: random bearer tokens for one stack: an administrator
  (user `nodeflow-dev-admin`, group `system:masters`: the user, kubectl, the kubelet and binder
  process, the tests' setup) and the worker, which authenticates as the ServiceAccount
  `system:serviceaccount:<namespace>:<service_account>` with the groups kube-apiserver gives service
  accounts. `tokens` is the table the emulator is given (`devstack.kube.access.write_tokens`).
- `worker_objects(rules_file, ...)`: the objects a Helm release of the chart makes for the worker, built
  from the chart's RBAC rules file (`clusterRules:` for the ClusterRole, `leaseRules:` for the Role in
  the release's namespace; the file the chart's templates include) without helm: the Namespace, the
  ServiceAccount, the ClusterRole and its ClusterRoleBinding, the Role and its RoleBinding, all named
  after the release. Without a rules file only the Namespace and the ServiceAccount.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devstack.kube import catalog, rbac
from devstack.kube.catalog import ServedResource

ADMIN_USER = rbac.User("nodeflow-dev-admin", (rbac.MASTERS, rbac.AUTHENTICATED))
_RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Identities:
    """The bearer tokens of one stack (see the module docstring)."""

    admin_token: str
    worker_token: str
    worker: rbac.User

    @classmethod
    def new(cls, namespace: str, service_account: str) -> Identities:
        return cls(secrets.token_urlsafe(32), secrets.token_urlsafe(32),
                   rbac.service_account_user(namespace, service_account))  # fmt: skip

    @property
    def tokens(self) -> dict[str, rbac.User]:
        return {self.admin_token: ADMIN_USER, self.worker_token: self.worker}


def load_rules(rules_file: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(clusterRules, leaseRules) of the chart's rules file; ValueError naming the file when either is
    missing or not a list of rules."""
    doc = yaml.safe_load(rules_file.read_text()) or {}
    found = []
    for key in ("clusterRules", "leaseRules"):
        rules = doc.get(key) if isinstance(doc, dict) else None
        if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
            raise ValueError(f"{rules_file}: `{key}` must be a list of RBAC rules")
        found.append(rules)
    return found[0], found[1]


def _doc(res: ServedResource, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": res.api_version, "kind": res.kind, **fields}


def worker_objects(
    rules_file: Path | None, namespace: str, service_account: str, name: str = "nodeflow"
) -> list[dict[str, Any]]:
    """The worker's Namespace, ServiceAccount and (with `rules_file`) RBAC objects, as manifests (with
    apiVersion and kind), in creation order."""
    objects = [
        _doc(catalog.NAMESPACE, metadata={"name": namespace}),
        _doc(catalog.SERVICEACCOUNT, metadata={"name": service_account, "namespace": namespace}),
    ]
    if rules_file is None:
        return objects
    cluster_rules, lease_rules = load_rules(rules_file)
    subjects = [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]
    cluster_ref = {"apiGroup": _RBAC_GROUP, "kind": "ClusterRole", "name": name}
    role_ref = {"apiGroup": _RBAC_GROUP, "kind": "Role", "name": name}
    namespaced = {"name": name, "namespace": namespace}
    return [
        *objects,
        _doc(catalog.CLUSTERROLE, metadata={"name": name}, rules=cluster_rules),
        _doc(catalog.CLUSTERROLEBINDING, metadata={"name": name}, roleRef=cluster_ref, subjects=subjects),
        _doc(catalog.ROLE, metadata=namespaced, rules=lease_rules),
        _doc(catalog.ROLEBINDING, metadata=namespaced, roleRef=role_ref, subjects=subjects),
    ]
