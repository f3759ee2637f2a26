"""tests/rbac_coverage.py: the chart's rules against the worker's recorded Kubernetes requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.rbac_coverage import (
    NEEDED_BEYOND_REQUESTS,
    ROOT,
    WORKER_USER,
    coverage_problems,
    covers_every_e2e_test,
    grants,
    load_rules,
    policy_problems,
)

CLUSTER = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "watch"]},
           {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]  # fmt: skip
LEASES = [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]}]


def record(verb: str, resource: str, group: str = "", namespace: str | None = None, allowed: bool = True,
           user: str = WORKER_USER.name) -> dict[str, Any]:  # fmt: skip
    return {"user": user, "verb": verb, "group": group, "resource": resource, "namespace": namespace,
            "allowed": allowed}  # fmt: skip


def test_every_grant_needed_by_an_allowed_request_and_none_refused_is_no_problem() -> None:
    records = [record("get", "nodes"), record("watch", "nodes"), record("create", "pods/eviction", namespace="x"),
               record("get", "leases", "coordination.k8s.io", "nodeflow")]  # fmt: skip
    assert policy_problems(CLUSTER, LEASES, records) == []


def test_a_refused_request_of_the_worker_is_a_problem_and_other_users_are_not_the_charts() -> None:
    records = [record("get", "nodes"), record("watch", "nodes"), record("create", "pods/eviction", namespace="x"),
               record("get", "leases", "coordination.k8s.io", "nodeflow"),
               record("delete", "nodepools", "karpenter.sh", allowed=False),
               record("create", "namespaces", allowed=False, user="alice")]  # fmt: skip
    assert policy_problems(CLUSTER, LEASES, records) == ["refused: delete nodepools.karpenter.sh at the cluster scope"]


def test_a_grant_no_request_needed_is_named_and_a_lease_used_elsewhere_does_not_count() -> None:
    records = [record("get", "nodes"), record("get", "leases", "coordination.k8s.io", "default")]
    assert policy_problems(CLUSTER, LEASES, records) == [
        "granted but never needed: create pods/eviction",
        'granted but never needed: get leases.coordination.k8s.io in namespace "nodeflow"',
        "granted but never needed: watch nodes",
    ]


def test_unneeded_grants_fail_only_a_complete_run(tmp_path: Path) -> None:
    refused = [record("watch", "nodes", allowed=False)]
    assert coverage_problems(refused, complete=False) == ["refused: watch nodes at the cluster scope"]
    assert any(p.startswith("granted but never needed") for p in coverage_problems(refused, complete=True))


def test_the_charts_rules_file_has_both_lists_and_the_exceptions_are_grants_it_makes() -> None:
    cluster, leases = load_rules()
    assert {(g, r, v) for g, r, v, _ in grants(cluster, None)} >= set(NEEDED_BEYOND_REQUESTS)
    assert {r for _, r, _, _ in grants(leases, "nodeflow")} == {"leases"}


def test_a_run_covers_every_e2e_test_only_when_it_collects_tests_e2e_whole() -> None:
    assert covers_every_e2e_test([], ROOT, narrowed=False)
    assert covers_every_e2e_test(["tests"], ROOT, narrowed=False)
    assert covers_every_e2e_test(["tests/e2e"], ROOT, narrowed=False)
    assert not covers_every_e2e_test(["tests/e2e/test_provisioning.py"], ROOT, narrowed=False)
    assert not covers_every_e2e_test(["tests/e2e", "tests/e2e/test_x.py::test_y"], ROOT, narrowed=False)
    assert not covers_every_e2e_test([], ROOT, narrowed=True)
