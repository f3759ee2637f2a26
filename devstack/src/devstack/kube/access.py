"""Authentication and authorization of the emulator's requests, as kube-apiserver does them with bearer
tokens and the RBAC authorizer (the pure rules are `devstack.kube.rbac`).

`Access` holds the token table (token -> user; `load_tokens` reads it from a JSON file
`{"<token>": {"user": NAME, "groups": [...]}}`) and the store the RBAC objects live in:
- `authenticate(headers)`: the user of `Authorization: Bearer <token>`; an unknown or missing token is
  refused with 401 Unauthorized (the emulator serves no anonymous user).
- `authorize(user, method, path, query)`: 403 Forbidden, worded as kube-apiserver words it, unless the
  user is in `system:masters` or a ClusterRole/Role bound to it allows the request.
- `review(user, resource, body)`: the answer to a SelfSubjectAccessReview or SelfSubjectRulesReview
  for the requesting user (what `kubectl auth can-i` posts); never stored.

- `admit(resource, new, old)`: the OwnerReferencesPermissionEnforcement admission plugin (optional in
  kube-apiserver; OpenShift enables it), run so that the chart's rules work wherever it runs: a request
  that changes an object's `metadata.ownerReferences` needs `delete` on that object, and one that sets
  `blockOwnerDeletion: true` on a reference (new, or changed to true) needs `update` on the owner's
  `<resource>/finalizers`; otherwise 403 Forbidden in the plugin's words. It judges the user of the request
  being served (`serving(user)`), and no one when the write is the emulator's own.

`bootstrap(store)` creates what kube-apiserver's bootstrap policy makes that the emulator honours:
`cluster-admin` bound to `system:masters`, `system:discovery`, `system:basic-user` and
`system:public-info-viewer` bound to `system:authenticated` (discovery paths, /version, the health
paths, and creating self-reviews).

The authorization log: with a directory (from `DEVSTACK_KUBE_AUTHZ_LOG` when the server is started
by the stack), each distinct decision on a resource request of a user outside `system:masters` is
appended once as a JSON line `{"user", "verb", "group", "resource", "namespace", "allowed"}` (the
resource as `<resource>/<subresource>`, the namespace null at the cluster scope) to a file of this
process's own; `read_authz_log(directory)` returns them all.
"""

from __future__ import annotations

import contextvars
import json
import os
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devstack.kube import catalog, errors, rbac
from devstack.kube.catalog import (
    CLUSTERROLE,
    CLUSTERROLEBINDING,
    ROLE,
    ROLEBINDING,
    SELFSUBJECTACCESSREVIEW,
    ServedResource,
)
from devstack.kube.rbac import Attributes, User
from devstack.kube.store import ObjectStore

AUTHZ_LOG_ENV = "DEVSTACK_KUBE_AUTHZ_LOG"
# The user whose request the emulator is serving (None: the emulator's own controllers are writing).
_SERVING: contextvars.ContextVar[User | None] = contextvars.ContextVar("devstack_kube_serving", default=None)


def authz_log_from_env() -> Path | None:
    """The directory `DEVSTACK_KUBE_AUTHZ_LOG` names, None when it is unset or empty."""
    value = os.environ.get(AUTHZ_LOG_ENV, "")
    return Path(value) if value else None


def load_tokens(path: Path) -> dict[str, User]:
    """The token table of a JSON file `{"<token>": {"user": NAME, "groups": [GROUP, ...]}}`."""
    table = json.loads(path.read_text())
    return {token: User(entry["user"], tuple(entry.get("groups") or ())) for token, entry in table.items()}


def write_tokens(path: Path, tokens: Mapping[str, User]) -> None:
    """Write a token table `load_tokens` reads, private to its owner (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({t: {"user": u.name, "groups": list(u.groups)} for t, u in tokens.items()}))
    tmp.chmod(0o600)
    tmp.replace(path)


def unauthorized() -> errors.ApiError:
    return errors.ApiError(401, "Unauthorized", "Unauthorized")


def _bootstrap_objects() -> list[tuple[ServedResource, dict[str, Any]]]:
    def role(name: str, rules: list[dict[str, Any]]) -> tuple[ServedResource, dict[str, Any]]:
        return CLUSTERROLE, {"metadata": {"name": name}, "rules": rules}

    def binding(name: str, group: str) -> tuple[ServedResource, dict[str, Any]]:
        subject = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
        return CLUSTERROLEBINDING, {"metadata": {"name": name}, "roleRef": ref, "subjects": [subject]}

    health = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
    discovery = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *health]
    reviews = ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]
    return [
        role(
            "cluster-admin",
            [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}],
        ),
        binding("cluster-admin", rbac.MASTERS),
        role("system:discovery", [{"nonResourceURLs": discovery, "verbs": ["get"]}]),
        binding("system:discovery", rbac.AUTHENTICATED),
        role("system:basic-user", [{"apiGroups": ["authorization.k8s.io"], "resources": reviews, "verbs": ["create"]}]),
        binding("system:basic-user", rbac.AUTHENTICATED),
        role("system:public-info-viewer", [{"nonResourceURLs": health, "verbs": ["get"]}]),
        binding("system:public-info-viewer", rbac.AUTHENTICATED),
    ]


def bootstrap(store: ObjectStore) -> None:
    """Create the bootstrap ClusterRoles and ClusterRoleBindings the emulator honours (see the module
    docstring); existing ones are left as they are."""
    for res, obj in _bootstrap_objects():
        if store.find(res, None, obj["metadata"]["name"]) is None:
            store.create(res, None, obj)


class AuthzLog:
    """Appends each new decision line to its own file in `directory` (created if missing)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"authz-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def record(self, attrs: Attributes, allowed: bool) -> None:
        line = json.dumps(
            {
                "user": attrs.user.name,
                "verb": attrs.verb,
                "group": attrs.api_group,
                "resource": attrs.resource_and_subresource,
                "namespace": attrs.namespace or None,
                "allowed": allowed,
            },
            sort_keys=True,
        )
        with self._lock:
            if line in self._seen:
                return
            self._seen.add(line)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")


def read_authz_log(directory: Path) -> list[dict[str, Any]]:
    """Every decision recorded in `directory` (all processes), without duplicates, in a stable order."""
    lines = {line for f in sorted(directory.glob("authz-*.jsonl")) for line in f.read_text().splitlines() if line}
    return [json.loads(line) for line in sorted(lines)]


class Access:
    """See the module docstring. Runs on the emulator's loop (reads the store directly)."""

    def __init__(self, store: ObjectStore, tokens: Mapping[str, User], authz_log: Path | None = None) -> None:
        self._store = store
        self._tokens = dict(tokens)
        self._log = AuthzLog(authz_log) if authz_log is not None else None

    def authenticate(self, headers: Mapping[str, str]) -> User:
        """The user of the request's bearer token; 401 without a known one."""
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        user = self._tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise unauthorized()
        return user

    def policy(self) -> rbac.Policy:
        store = self._store
        return rbac.Policy(
            cluster_roles={r["metadata"]["name"]: r for r in store.list(CLUSTERROLE)},
            cluster_role_bindings=store.list(CLUSTERROLEBINDING),
            roles=lambda namespace, name: store.find(ROLE, namespace, name),
            role_bindings=lambda namespace: store.list(ROLEBINDING, namespace),
        )

    def authorize(self, user: User, method: str, path: str, query: Mapping[str, str]) -> None:
        """Raise 403 Forbidden unless the user may make this request (see the module docstring)."""
        attrs = rbac.request_attributes(user, method, path, query)
        if rbac.MASTERS in user.groups:
            return
        self._require(attrs, "")

    @staticmethod
    @contextmanager
    def serving(user: User) -> Iterator[None]:
        """Writes made inside are `user`'s, for `admit`."""
        token = _SERVING.set(user)
        try:
            yield
        finally:
            _SERVING.reset(token)

    def admit(self, res: ServedResource, new: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        """OwnerReferencesPermissionEnforcement (module docstring); the store calls it before it commits."""
        user = _SERVING.get()
        if user is None or rbac.MASTERS in user.groups:
            return
        meta, old_meta = new.get("metadata") or {}, (old or {}).get("metadata") or {}
        refs, old_refs = list(meta.get("ownerReferences") or []), list(old_meta.get("ownerReferences") or [])
        if refs == old_refs:
            return
        namespace = str(meta.get("namespace") or "") if res.namespaced else ""
        self._require(Attributes(user, "delete", True, "", res.group, res.version, res.plural, "", namespace,
                                 str(meta.get("name") or "")), "")  # fmt: skip
        blocking_before = {r.get("uid") for r in old_refs if r.get("blockOwnerDeletion")}
        for ref in refs:
            if not ref.get("blockOwnerDeletion") or ref.get("uid") in blocking_before:
                continue
            owner = catalog.lookup_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
            if owner is None:
                raise errors.ApiError(
                    403, "Forbidden", f"cannot set blockOwnerDeletion in this case because cannot find RESTMapping "
                    f"for APIVersion {ref.get('apiVersion')} Kind {ref.get('kind')}"
                )  # fmt: skip
            owner_namespace = namespace if owner.namespaced else ""
            self._require(Attributes(user, "update", True, "", owner.group, owner.version, owner.plural, "finalizers",
                                     owner_namespace, str(ref.get("name") or "")),
                          "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set "
                          "finalizers on: ")  # fmt: skip

    def _require(self, attrs: Attributes, prefix: str) -> None:
        """Raise 403 Forbidden, its message after `prefix`, unless RBAC allows `attrs`; a resource request's
        decision goes to the authorization log."""
        allowed, _ = rbac.authorize(self.policy(), attrs)
        if self._log is not None and attrs.resource_request:
            self._log.record(attrs, allowed)
        if not allowed:
            raise errors.ApiError(
                403, "Forbidden", prefix + rbac.forbidden_message(attrs), rbac.forbidden_details(attrs)
            )

    def review(self, user: User, res: ServedResource, body: Any) -> dict[str, Any]:
        """The answered SelfSubjectAccessReview or SelfSubjectRulesReview (`body` as posted)."""
        if not isinstance(body, dict):
            raise errors.bad_request(f"a {res.kind} needs a JSON object body")
        spec = body.get("spec") or {}
        answer = {"kind": res.kind, "apiVersion": res.api_version, "metadata": {"creationTimestamp": None},
                  "spec": spec}  # fmt: skip
        if res == SELFSUBJECTACCESSREVIEW:
            answer["status"] = self._access_status(user, spec)
        else:
            answer["status"] = self._rules_status(user, str(spec.get("namespace") or ""))
        return answer

    def _access_status(self, user: User, spec: Mapping[str, Any]) -> dict[str, Any]:
        resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if resource:
            attrs = Attributes(user, str(resource.get("verb") or ""), True, "", str(resource.get("group") or ""),
                               str(resource.get("version") or ""), str(resource.get("resource") or ""),
                               str(resource.get("subresource") or ""), str(resource.get("namespace") or ""),
                               str(resource.get("name") or ""))  # fmt: skip
        elif non_resource:
            attrs = Attributes(user, str(non_resource.get("verb") or ""), False, str(non_resource.get("path") or ""))
        else:
            raise errors.bad_request("exactly one of spec.resourceAttributes and spec.nonResourceAttributes is needed")
        allowed, reason = rbac.authorize(self.policy(), attrs)
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return status

    def _rules_status(self, user: User, namespace: str) -> dict[str, Any]:
        rules = [rule for g in rbac.grants_for(self.policy(), user, namespace) for rule in g.rules]
        keys = ("verbs", "apiGroups", "resources", "resourceNames")
        resource_rules = [{k: rule[k] for k in keys if rule.get(k)} for rule in rules if rule.get("resources")]
        non_resource_rules = [
            {"verbs": rule["verbs"], "nonResourceURLs": rule["nonResourceURLs"]}
            for rule in rules
            if rule.get("nonResourceURLs")
        ]
        return {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}
