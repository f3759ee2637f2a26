"""`nodeflow dev` headless, as a user runs it: JSON summary on stdout, logs elsewhere, exit code 1
when the cluster does not settle (here: no worker, so the pods stay pending)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 500m}}}]
"""


def test_headless_prints_the_summary_and_exits_1_when_not_settled(tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT)
    ports = ["--temporal-port", "0", "--ui-port", "0", "--kube-port", "0", "--moto-port", "0"]
    result = subprocess.run(
        [sys.executable, "-m", "workers.cli", "dev", *ports, "--state-dir", str(tmp_path / "state"), "--no-worker",
         "--no-ui", "--apply", str(manifest), "--until-settled", "--timeout", "1", "-o", "json"],
        capture_output=True, text=True, timeout=120, check=False, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert summary["settled"] is False
    assert summary["pods"]["total"] == 3 and summary["pods"]["bound"] == 0
    assert summary["errors"] == []
    assert "stopped temporal" in result.stderr
    assert all((tmp_path / "state" / "logs" / f"{name}.log").exists() for name in ("kube-api", "moto", "kubelet"))
