"""The chart's RBAC rules against the Kubernetes requests the worker made: helpers and the end-of-run check.

tests/conftest.py points `DEVSTACK_KUBE_AUTHZ_LOG` at a fresh directory before the run (xdist workers and
the stacks' services processes inherit it), so every emulator of the run that authorizes (each stack's)
records each distinct decision it made for a user outside `system:masters`
(devstack.kube.access.AuthzLog: user, verb, API group, resource[/subresource], namespace or the cluster
scope, allowed or not). Every stack runs the worker as the ServiceAccount `nodeflow` of namespace
`nodeflow` under the rules of `RULES_FILE` (the chart's, which its templates include). At the end of the
session `coverage_problems` compares them: a request of that ServiceAccount that was refused always
fails the run (the worker needs a verb the chart does not grant); a granted verb that no allowed request
needed fails it only when the run covered every end-to-end test (otherwise most requests were never made).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from devstack.kube import rbac
from tests.run_coverage import covers_every_test

ROOT = Path(__file__).resolve().parents[1]
RULES_FILE = ROOT / "deploy" / "charts" / "nodeflow" / "rbac-rules.yaml"
WORKER_NAMESPACE = "nodeflow"  # the stack's (devstack.stack.config.DEFAULT_WORKER_NAMESPACE), its Role's
WORKER_USER = rbac.service_account_user(WORKER_NAMESPACE, "nodeflow")
# The test directories whose runs exercise every request the worker makes (it runs only on a stack).
COVERING_DIRS = (ROOT / "tests" / "e2e",)
# Grants no request to the emulator can show, each with why it is kept. None today: the emulator runs the
# OwnerReferencesPermissionEnforcement admission plugin (devstack.kube.access), so `update` on
# nodepools/finalizers and nodeclaims/finalizers is asked for when the worker sets a NodeClaim's or a Node's
# ownerReference.
NEEDED_BEYOND_REQUESTS: dict[tuple[str, str, str], str] = {}

Grant = tuple[str, str, str, str | None]  # (API group, resource[/subresource], verb, namespace or None)


def load_rules(path: Path = RULES_FILE) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(clusterRules, leaseRules) of the rules file."""
    doc = yaml.safe_load(path.read_text())
    return list(doc["clusterRules"]), list(doc["leaseRules"])


def grants(rules: Iterable[dict[str, Any]], namespace: str | None) -> set[Grant]:
    """Every (group, resource, verb, namespace) the rules name; `namespace` None for a ClusterRole's."""
    return {
        (g, r, v, namespace)
        for rule in rules
        for g in rule.get("apiGroups", [])
        for r in rule.get("resources", [])
        for v in rule.get("verbs", [])
    }


def worker_records(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded decisions on the worker's ServiceAccount's requests."""
    return [r for r in records if r["user"] == WORKER_USER.name]


def _describe(record: dict[str, Any]) -> str:
    resource = f"{record['resource']}.{record['group']}" if record["group"] else record["resource"]
    scope = f'in namespace "{record["namespace"]}"' if record["namespace"] else "at the cluster scope"
    return f"{record['verb']} {resource} {scope}"


def _allows(grant: Grant, record: dict[str, Any]) -> bool:
    """Whether this one grant allows the recorded request (RBAC's rule matching, and a Role's namespace)."""
    group, resource, verb, namespace = grant
    if namespace is not None and record["namespace"] != namespace:
        return False
    resource_name, _, subresource = record["resource"].partition("/")
    attrs = rbac.Attributes(WORKER_USER, record["verb"], True, "", record["group"], "", resource_name, subresource,
                            record["namespace"] or "")  # fmt: skip
    return rbac.rule_allows({"apiGroups": [group], "resources": [resource], "verbs": [verb]}, attrs)


def policy_problems(
    cluster_rules: list[dict[str, Any]], lease_rules: list[dict[str, Any]], records: Iterable[dict[str, Any]]
) -> list[str]:
    """Refused requests of the worker, and grants no allowed request of it needed (NEEDED_BEYOND_REQUESTS
    aside), as messages."""
    mine = worker_records(records)
    refused = sorted({f"refused: {_describe(r)}" for r in mine if not r["allowed"]})
    allowed = [r for r in mine if r["allowed"]]
    granted = grants(cluster_rules, None) | grants(lease_rules, WORKER_NAMESPACE)
    unused = sorted(
        f"granted but never needed: {verb} {resource}{'.' + group if group else ''}"
        + (f' in namespace "{namespace}"' if namespace else "")
        for grant in granted
        for group, resource, verb, namespace in [grant]
        if (group, resource, verb) not in NEEDED_BEYOND_REQUESTS and not any(_allows(grant, r) for r in allowed)
    )
    return refused + unused


def covers_every_e2e_test(args: list[str], invocation_dir: Path, narrowed: bool) -> bool:
    """Whether a run with these command-line paths collects every test of COVERING_DIRS; `narrowed`:
    options leave some out (tests.run_coverage.narrowed)."""
    return covers_every_test(COVERING_DIRS, args, invocation_dir, narrowed)


def coverage_problems(records: Iterable[dict[str, Any]], complete: bool) -> list[str]:
    """`policy_problems` of the chart's rules file and the recorded decisions; only the refusals unless
    `complete`."""
    problems = policy_problems(*load_rules(), records)
    return problems if complete else [p for p in problems if p.startswith("refused")]
