"""`nodeflow dev` as users run it (`make run`, and headless in CI), driven by kubectl, the temporal CLI
and HTTP, and stopped with Ctrl-C leaving no process behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import psutil
import pytest

import devstack
from tests.e2e.conftest import REPO, deployment
from tests.eventually import eventually

pytestmark = pytest.mark.e2e
NODEFLOW = [sys.executable, "-m", "workers.cli"]
DEVSTACK_DEFAULTS = Path(devstack.__file__).parent / "defaults.yaml"
EXAMPLES = REPO.parent / "shared" / "karpenter-reference" / "karpenter-examples"


def read_banner(process: subprocess.Popen[str], timeout: float = 90) -> str:
    """Lines printed until the banner's last line (the worker log hint)."""
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "worker.log" in line:
            return "".join(lines)
    raise AssertionError(f"no banner; got {''.join(lines)!r}")


def test_should_serve_kubectl_temporal_cli_and_ui_then_stop_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    zero_ports = ["--temporal-port", "0", "--ui-port", "0", "--kube-port", "0", "--moto-port", "0"]
    process = subprocess.Popen(
        [*NODEFLOW, "dev", *zero_ports, "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        banner = read_banner(process)
        ui = re.search(r"Temporal UI\s+(\S+)", banner)
        temporal = re.search(r"Temporal\s+(127\.0\.0\.1:\d+)", banner)
        assert ui and temporal, banner
        assert re.search(r"metrics\s+http://127\.0\.0\.1:\d+/metrics \(worker\)", banner), banner
        children = psutil.Process(process.pid).children(recursive=True)
        kubectl = ["kubectl", "--kubeconfig", str(tmp_path / "state" / "kubeconfig")]
        manifest = tmp_path / "web.yaml"
        manifest.write_text(deployment("web", 3, cpu="500m", memory="512Mi"))
        subprocess.run([*kubectl, "apply", "--validate=false", "-f", str(manifest)], check=True, capture_output=True)

        def all_bound() -> bool:
            out = subprocess.run([*kubectl, "get", "pods", "-o", "json"], check=True, capture_output=True, text=True)
            pods = json.loads(out.stdout)["items"]
            return len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods)

        eventually(all_bound, timeout=120, interval=1, what="kubectl to show every pod bound")
        for kind in ("nodes", "nodeclaims", "nodepools", "ec2nodeclasses", "deployments"):
            subprocess.run([*kubectl, "get", kind], check=True, capture_output=True)

        with urllib.request.urlopen(ui.group(1), timeout=10) as page:
            assert page.status == 200
        query = urllib.parse.quote('WorkflowType="NodeClaim"')
        api = f"{ui.group(1).rstrip('/')}/api/v1/namespaces/default/workflows?query={query}"

        def ui_lists_claims() -> bool:
            with urllib.request.urlopen(api, timeout=10) as response:
                return bool(json.load(response).get("executions"))

        eventually(ui_lists_claims, timeout=30, what="the UI to list NodeClaim workflows")
        temporal_cli = Path(sys.executable).parent / "temporal"
        listed = subprocess.run(
            [
                str(temporal_cli),
                "workflow",
                "list",
                "--address",
                temporal.group(1),
                "--query",
                'WorkflowType="NodeClaim"',
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        assert "NodeClaim" in listed.stdout
    finally:
        os.killpg(process.pid, signal.SIGINT) if process.poll() is None else None
        process.wait(timeout=60)
        if process.stdout is not None:
            process.stdout.close()
    assert process.returncode == 0
    assert [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE] == []


@pytest.mark.skipif(not EXAMPLES.exists(), reason="../shared/karpenter-reference is not beside the repository")
def test_headless_general_purpose_nodepool_binds_ten_pods(tmp_path: Path) -> None:
    manifest = tmp_path / "inflate.yaml"
    manifest.write_text(deployment("inflate", 10, cpu="1", memory="1.5Gi"))
    result = subprocess.run(
        [*NODEFLOW, "dev", "--temporal-port", "0", "--ui-port", "0", "--kube-port", "0", "--moto-port", "0",
         "--state-dir", str(tmp_path / "state"), "--no-ui",
         "--apply", str(EXAMPLES / "general-purpose.yaml"), "--apply", str(manifest),
         "--until-settled", "--timeout", "180", "-o", "json"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    summary = json.loads(result.stdout)
    assert summary["pods"] == {"total": 10, "bound": 10, "pending": 0}
    assert len(summary["instances"]) == len(summary["nodeClaims"]) >= 1
    for claim in summary["nodeClaims"]:
        assert {claim["conditions"][c] for c in ("Launched", "Registered", "Initialized")} == {"True"}

    # The dry run, given what the stack was given (its defaults included), plans the same nodes.
    simulated = subprocess.run(
        [*NODEFLOW, "simulate", "-f", str(DEVSTACK_DEFAULTS),
         "-f", str(EXAMPLES / "general-purpose.yaml"), "-f", str(manifest), "-o", "json"],
        capture_output=True, text=True, cwd=REPO, check=True,
    )  # fmt: skip
    plan = json.loads(simulated.stdout)
    assert plan["unschedulable"] == []
    assert sorted((c["nodePool"], c["instanceTypes"][0]) for c in plan["nodeClaims"]) == sorted(
        (c["nodePool"], c["instanceType"]) for c in summary["nodeClaims"]
    )
