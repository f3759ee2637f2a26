"""devstack.kube.rbac restates Kubernetes' RBAC: the request attributes kube-apiserver's request-info
resolver computes from a request, the RBAC authorizer's rule and subject matching, and the wording of
its refusals."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.kube import rbac
from devstack.kube.rbac import Attributes, Policy, User

SA = rbac.service_account_user("nodeflow", "nodeflow")


def attrs(method: str, path: str, **query: str) -> Attributes:
    return rbac.request_attributes(SA, method, path, query)


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        # (verb, group, resource, subresource, namespace, name)
        ("GET", "/api/v1/nodes", {}, ("list", "", "nodes", "", "", "")),
        ("GET", "/api/v1/nodes", {"watch": "true"}, ("watch", "", "nodes", "", "", "")),
        ("GET", "/api/v1/nodes", {"watch": "1"}, ("watch", "", "nodes", "", "", "")),
        ("GET", "/api/v1/nodes/n1", {}, ("get", "", "nodes", "", "", "n1")),
        ("HEAD", "/api/v1/nodes/n1", {}, ("get", "", "nodes", "", "", "n1")),
        ("PATCH", "/api/v1/nodes/n1/status", {}, ("patch", "", "nodes", "status", "", "n1")),
        ("PUT", "/api/v1/nodes/n1", {}, ("update", "", "nodes", "", "", "n1")),
        ("DELETE", "/api/v1/nodes/n1", {}, ("delete", "", "nodes", "", "", "n1")),
        ("DELETE", "/api/v1/namespaces/ns/pods", {}, ("deletecollection", "", "pods", "", "ns", "")),
        ("POST", "/api/v1/namespaces/ns/pods/p/eviction", {}, ("create", "", "pods", "eviction", "ns", "p")),
        ("GET", "/api/v1/pods", {}, ("list", "", "pods", "", "", "")),
        # A Namespace's own path: the namespace is the object's name (the request-info resolver's rule).
        ("GET", "/api/v1/namespaces/ns", {}, ("get", "", "namespaces", "", "ns", "ns")),
        ("PUT", "/api/v1/namespaces/ns/finalize", {}, ("update", "", "namespaces", "finalize", "ns", "ns")),
        ("GET", "/api/v1/namespaces", {}, ("list", "", "namespaces", "", "", "")),
        (
            "PATCH",
            "/apis/karpenter.sh/v1/nodeclaims/c/status",
            {},
            ("patch", "karpenter.sh", "nodeclaims", "status", "", "c"),
        ),
        (
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/nodeflow/leases/l",
            {},
            ("update", "coordination.k8s.io", "leases", "", "nodeflow", "l"),
        ),
    ],
)
def test_request_attributes_as_the_request_info_resolver_computes_them(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    a = attrs(method, path, **query)
    assert a.resource_request
    assert (a.verb, a.api_group, a.resource, a.subresource, a.namespace, a.name) == expected


@pytest.mark.parametrize("path", ["/api", "/api/v1", "/apis", "/apis/karpenter.sh", "/apis/apps/v1", "/version", "/"])
def test_discovery_and_other_paths_are_non_resource_requests_with_the_method_as_verb(path: str) -> None:
    a = attrs("GET", path)
    assert (a.resource_request, a.verb, a.path) == (False, "get", path)


def rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names is not None:
        found["resourceNames"] = names
    return found


def test_a_rule_matches_verb_group_and_resource_each_or_a_star() -> None:
    watch_nodes = attrs("GET", "/api/v1/nodes", watch="true")
    assert rbac.rule_allows(rule([""], ["nodes"], ["watch"]), watch_nodes)
    assert not rbac.rule_allows(rule([""], ["nodes"], ["get", "list", "patch", "delete"]), watch_nodes)
    assert rbac.rule_allows(rule([""], ["nodes"], ["*"]), watch_nodes)
    assert rbac.rule_allows(rule(["*"], ["*"], ["watch"]), watch_nodes)
    assert not rbac.rule_allows(rule(["apps"], ["nodes"], ["watch"]), watch_nodes)


def test_a_subresource_needs_its_own_grant_or_a_star_slash_subresource() -> None:
    eviction = attrs("POST", "/api/v1/namespaces/ns/pods/p/eviction")
    assert not rbac.rule_allows(rule([""], ["pods"], ["create"]), eviction)
    assert rbac.rule_allows(rule([""], ["pods/eviction"], ["create"]), eviction)
    assert rbac.rule_allows(rule([""], ["*/eviction"], ["create"]), eviction)
    assert rbac.rule_allows(rule([""], ["*"], ["create"]), eviction)
    assert not rbac.rule_allows(rule([""], ["pods/*"], ["create"]), eviction)  # not a pattern RBAC knows
    status = attrs("PATCH", "/apis/karpenter.sh/v1/nodeclaims/c/status")
    assert not rbac.rule_allows(rule(["karpenter.sh"], ["nodeclaims"], ["patch"]), status)
    assert rbac.rule_allows(rule(["karpenter.sh"], ["nodeclaims/status"], ["patch"]), status)


def test_resource_names_limit_a_rule_to_those_objects_and_so_never_allow_a_list() -> None:
    named = rule(["coordination.k8s.io"], ["leases"], ["get", "list"], ["mine"])
    assert rbac.rule_allows(named, attrs("GET", "/apis/coordination.k8s.io/v1/namespaces/n/leases/mine"))
    assert not rbac.rule_allows(named, attrs("GET", "/apis/coordination.k8s.io/v1/namespaces/n/leases/other"))
    assert not rbac.rule_allows(named, attrs("GET", "/apis/coordination.k8s.io/v1/namespaces/n/leases"))


def test_non_resource_rules_match_paths_exactly_or_by_a_trailing_star_and_only_non_resource_requests() -> None:
    discovery = {"nonResourceURLs": ["/api", "/apis/*"], "verbs": ["get"]}
    assert rbac.rule_allows(discovery, attrs("GET", "/api"))
    assert rbac.rule_allows(discovery, attrs("GET", "/apis/apps/v1"))
    assert not rbac.rule_allows(discovery, attrs("GET", "/version"))
    assert not rbac.rule_allows(discovery, attrs("GET", "/api/v1/nodes"))
    assert not rbac.rule_allows(rule(["*"], ["*"], ["*"]), attrs("GET", "/version"))


def test_subjects_match_users_groups_and_service_accounts_by_their_user_name() -> None:
    alice = User("alice", ("devs",))
    assert rbac.subject_matches({"kind": "User", "name": "alice"}, alice)
    assert rbac.subject_matches({"kind": "Group", "name": "devs"}, alice)
    assert not rbac.subject_matches({"kind": "Group", "name": "ops"}, alice)
    assert rbac.subject_matches({"kind": "ServiceAccount", "name": "nodeflow", "namespace": "nodeflow"}, SA)
    assert not rbac.subject_matches({"kind": "ServiceAccount", "name": "nodeflow", "namespace": "other"}, SA)
    # A ServiceAccount subject without a namespace is the RoleBinding's namespace's.
    assert rbac.subject_matches({"kind": "ServiceAccount", "name": "nodeflow"}, SA, "nodeflow")
    assert not rbac.subject_matches({"kind": "ServiceAccount", "name": "nodeflow"}, SA)
    assert rbac.subject_matches({"kind": "Group", "name": "system:serviceaccounts:nodeflow"}, SA)


def binding(kind: str, name: str, ref_kind: str, namespace: str | None = None) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    subject = {"kind": "ServiceAccount", "name": "nodeflow", "namespace": "nodeflow"}
    return {"kind": kind, "metadata": meta, "roleRef": {"kind": ref_kind, "name": name}, "subjects": [subject]}


def test_a_role_binding_grants_only_in_its_namespace_and_a_cluster_role_binding_everywhere() -> None:
    lease_role = {"metadata": {"name": "leases", "namespace": "nodeflow"},
                  "rules": [rule(["coordination.k8s.io"], ["leases"], ["get"])]}  # fmt: skip
    node_reader = {"metadata": {"name": "nodes"}, "rules": [rule([""], ["nodes"], ["get"])]}
    policy = Policy(
        cluster_roles={"nodes": node_reader},
        cluster_role_bindings=[binding("ClusterRoleBinding", "nodes", "ClusterRole")],
        roles=lambda ns, name: lease_role if (ns, name) == ("nodeflow", "leases") else None,
        role_bindings=lambda ns: [binding("RoleBinding", "leases", "Role", "nodeflow")] if ns == "nodeflow" else [],
    )
    allowed, reason = rbac.authorize(policy, attrs("GET", "/api/v1/nodes/n"))
    assert allowed and reason == 'RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "nodes"'
    assert rbac.authorize(policy, attrs("GET", "/apis/coordination.k8s.io/v1/namespaces/nodeflow/leases/l"))[0]
    assert not rbac.authorize(policy, attrs("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l"))[0]
    assert rbac.authorize(policy, attrs("DELETE", "/api/v1/nodes/n")) == (False, "")
    assert rbac.authorize(Policy({}, []), rbac.request_attributes(User("root", (rbac.MASTERS,)), "DELETE", "/x", {}))[0]


def test_refusals_are_worded_as_kube_apiserver_words_them() -> None:
    assert rbac.forbidden_message(attrs("GET", "/api/v1/nodes", watch="true")) == (
        'nodes is forbidden: User "system:serviceaccount:nodeflow:nodeflow" cannot watch resource "nodes" '
        'in API group "" at the cluster scope'
    )
    assert rbac.forbidden_message(attrs("POST", "/api/v1/namespaces/x/pods/p/eviction")) == (
        'pods "p" is forbidden: User "system:serviceaccount:nodeflow:nodeflow" cannot create resource '
        '"pods/eviction" in API group "" in the namespace "x"'
    )
    assert rbac.forbidden_message(attrs("DELETE", "/apis/karpenter.sh/v1/nodepools/default")) == (
        'nodepools.karpenter.sh "default" is forbidden: User "system:serviceaccount:nodeflow:nodeflow" cannot '
        'delete resource "nodepools" in API group "karpenter.sh" at the cluster scope'
    )
    assert rbac.forbidden_message(attrs("GET", "/metrics")) == (
        'forbidden: User "system:serviceaccount:nodeflow:nodeflow" cannot get path "/metrics"'
    )
    assert rbac.forbidden_details(attrs("DELETE", "/apis/karpenter.sh/v1/nodepools/default")) == {
        "kind": "nodepools",
        "group": "karpenter.sh",
        "name": "default",
    }
