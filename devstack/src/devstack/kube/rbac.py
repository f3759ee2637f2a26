"""Kubernetes RBAC, the pure part: a request's authorization attributes and the RBAC authorizer's rule
and subject matching, as kube-apiserver computes them.

- `request_attributes` is kube-apiserver's request-info resolver: `/api/<v>/...` and
  `/apis/<group>/<v>/...` are resource requests, anything else (and `/api`, `/apis/<group>/<v>`) is a
  non-resource request whose verb is the lowercased HTTP method. For resources the verb comes from the
  method (GET and HEAD get, POST create, PUT update, PATCH patch, DELETE delete); a GET without a name is
  `list`, or `watch` with `watch=true`; a DELETE without a name is `deletecollection`. In
  `/namespaces/<ns>/...` the namespace is `<ns>`, and a Namespace object's own path
  (`/api/v1/namespaces/<ns>`) has namespace `<ns>` too. A third segment after the name is the
  subresource (`pods/eviction`, `nodes/status`).
- `rule_allows` is the RBAC authorizer's `RuleAllows`: the verb (`*` matches all), the API group (`*`),
  the resource, compared as `<resource>/<subresource>` (`*` matches all, `*/<subresource>` every
  resource's subresource), and `resourceNames` (empty: every name); non-resource rules match the path
  (`*` all, a trailing `*` a prefix) and apply only to non-resource requests.
- `subject_matches` is `appliesToUser`: a User by name, a Group by one of the user's groups, a
  ServiceAccount by the user name `system:serviceaccount:<namespace>:<name>` (the subject's namespace,
  else the RoleBinding's).
- `authorize` walks the ClusterRoleBindings, then (for a namespaced request) the RoleBindings of that
  namespace, and allows when a rule of a bound role allows; members of `system:masters` are always
  allowed (kube-apiserver's privileged group, checked before RBAC). `forbidden` words the 403 as
  kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
_METHOD_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")

Obj = dict[str, Any]


@dataclass(frozen=True)
class User:
    """An authenticated user: its name and groups."""

    name: str
    groups: tuple[str, ...] = ()


def service_account_user(namespace: str, name: str) -> User:
    """The user a ServiceAccount's token authenticates as, with the groups kube-apiserver gives it."""
    return User(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


@dataclass(frozen=True)
class Attributes:
    """What the authorizer decides on (kube-apiserver's authorizer.Attributes). For a non-resource
    request only `verb` and `path` are set."""

    user: User
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def resource_and_subresource(self) -> str:
        """`pods/eviction`, or `pods` without a subresource (what rules name)."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1", "t")


def request_attributes(user: User, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """The attributes of an HTTP request, as kube-apiserver's request-info resolver computes them."""
    parts = [p for p in path.strip("/").split("/") if p]
    non_resource = Attributes(user, method.lower(), False, path=path)
    if parts[:1] == ["api"]:
        group, rest = "", parts[1:]
    elif parts[:1] == ["apis"] and len(parts) >= 2:
        group, rest = parts[1], parts[2:]
    else:
        return non_resource
    if len(rest) < 2:  # /api/v1, /apis/<group>/<version>: discovery documents
        return non_resource
    version, rest = rest[0], rest[1:]
    verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if _truthy(query.get("watch")) else "list"
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user, verb, True, path, group, version, resource, subresource, namespace, name)


# -- rules and subjects -------------------------------------------------------------------------------


def _has(values: Iterable[str], wanted: str) -> bool:
    return any(v == "*" or v == wanted for v in values)


def _resource_matches(resources: Iterable[str], combined: str, subresource: str) -> bool:
    for resource in resources:
        if resource in ("*", combined):
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def _url_matches(urls: Iterable[str], path: str) -> bool:
    for url in urls:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """Whether one PolicyRule allows the request (RBAC's RuleAllows)."""
    if not _has(rule.get("verbs") or (), attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule.get("nonResourceURLs") or (), attrs.path)
    names = rule.get("resourceNames") or ()
    return (
        _has(rule.get("apiGroups") or (), attrs.api_group)
        and _resource_matches(rule.get("resources") or (), attrs.resource_and_subresource, attrs.subresource)
        and (not names or attrs.name in names)
    )


def subject_matches(subject: Mapping[str, Any], user: User, binding_namespace: str = "") -> bool:
    """Whether a binding's subject is this user (RBAC's appliesToUser)."""
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


def binds(binding: Mapping[str, Any], user: User) -> bool:
    """Whether a (Cluster)RoleBinding has this user among its subjects."""
    namespace = (binding.get("metadata") or {}).get("namespace") or ""
    return any(subject_matches(s, user, namespace) for s in binding.get("subjects") or ())


# -- the authorizer ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """The RBAC objects an authorization reads: ClusterRoles and Roles by (namespace, name) ("" for
    cluster-scoped), ClusterRoleBindings, and a function giving a namespace's RoleBindings."""

    cluster_roles: Mapping[str, Obj]
    cluster_role_bindings: Iterable[Obj]
    roles: Callable[[str, str], Obj | None] = lambda namespace, name: None
    role_bindings: Callable[[str], Iterable[Obj]] = lambda namespace: ()


@dataclass(frozen=True)
class Grant:
    """A binding whose role has rules for the user: where they come from, for the review's reason."""

    binding_kind: str
    binding: Obj
    rules: list[Obj]


def _role_rules(policy: Policy, role_ref: Mapping[str, Any], namespace: str) -> list[Obj]:
    if role_ref.get("kind") == "ClusterRole":
        role = policy.cluster_roles.get(role_ref.get("name", ""))
    elif role_ref.get("kind") == "Role" and namespace:
        role = policy.roles(namespace, role_ref.get("name", ""))
    else:
        role = None
    return list((role or {}).get("rules") or ())


def grants_for(policy: Policy, user: User, namespace: str) -> list[Grant]:
    """The user's bindings that apply in `namespace` ("" = cluster scope only), each with its role's
    rules: every ClusterRoleBinding, then the namespace's RoleBindings (RBAC's VisitRulesFor)."""
    found = [
        Grant("ClusterRoleBinding", b, _role_rules(policy, b.get("roleRef") or {}, ""))
        for b in policy.cluster_role_bindings
        if binds(b, user)
    ]
    if namespace:
        found += [
            Grant("RoleBinding", b, _role_rules(policy, b.get("roleRef") or {}, namespace))
            for b in policy.role_bindings(namespace)
            if binds(b, user)
        ]
    return found


def authorize(policy: Policy, attrs: Attributes) -> tuple[bool, str]:
    """(allowed, reason): `system:masters` first, then RBAC; the reason names the binding that allowed
    it as kube-apiserver's RBAC authorizer does ("" when denied: RBAC then has no opinion)."""
    if MASTERS in attrs.user.groups:
        return True, ""
    for grant in grants_for(policy, attrs.user, attrs.namespace):
        if any(rule_allows(rule, attrs) for rule in grant.rules):
            meta, ref = grant.binding.get("metadata") or {}, grant.binding.get("roleRef") or {}
            name = "/".join(n for n in (meta.get("name"), meta.get("namespace")) if n)
            return True, f'RBAC: allowed by {grant.binding_kind} "{name}" of {ref.get("kind")} "{ref.get("name")}"'
    return False, ""


def forbidden_message(attrs: Attributes) -> str:
    """kube-apiserver's wording of a refused request, e.g. `nodes is forbidden: User "u" cannot watch
    resource "nodes" in API group "" at the cluster scope`."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'forbidden: User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = attrs.resource_and_subresource
    what = f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}"'
    what += f' in the namespace "{attrs.namespace}"' if attrs.namespace else " at the cluster scope"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    return f'{qualified} "{attrs.name}" is forbidden: {what}' if attrs.name else f"{qualified} is forbidden: {what}"


def forbidden_details(attrs: Attributes) -> dict[str, Any]:
    """The Status details of the 403: the group, the resource as `kind`, and the name when there is one."""
    if not attrs.resource_request:
        return {}
    details: dict[str, Any] = {"kind": attrs.resource}
    if attrs.api_group:
        details["group"] = attrs.api_group
    if attrs.name:
        details["name"] = attrs.name
    return details
