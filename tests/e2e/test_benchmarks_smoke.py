"""Smoke test of benchmarks/scale.py: its argument checks, and both benchmarks end to end at a tiny
size with the JSON fields benchmarks/README.md documents. No speed or memory figure is asserted here
(those are the benchmarks' own targets, reported in their JSON)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import scale

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "scale.py"


def run_script(*args: str, timeout: float = 60.0) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr[-3000:]}"
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["--pods", "3"], "even number"),
        (["--pods", "0"], "even number"),
        (["--claims", "5"], "--claims needs --steady"),
        (["--claims", "0", "--steady"], "at least 1"),
        (["--pods", "2", "--steady"], "--steady goes with --claims"),
        (["--claims", "2", "--steady", "--concurrency", "0"], "--concurrency 0"),
        (["--pods", "2", "--claims", "2"], "not allowed with"),
        (["--claims", "2", "--steady", "--drift-check-interval", "soon"], "--drift-check-interval"),
        ([], "one of the arguments"),
    ],
)
def test_bad_arguments_are_refused_naming_the_flag(
    argv: list[str], wanted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        scale.parse_args(argv)
    assert exit_info.value.code == 2
    assert wanted in capsys.readouterr().err


def test_percentile_is_nearest_rank() -> None:
    assert scale.percentile([5.0], 95) == 5.0
    assert scale.percentile([float(v) for v in range(1, 101)], 95) == 95.0
    assert scale.percentile([3.0, 1.0, 2.0], 50) == 2.0


def test_workload_has_two_deployments_of_half_the_pods() -> None:
    text = scale.workload(10)
    assert text.count("kind: Deployment") == 2
    assert text.count("replicas: 5") == 2
    assert 'cpu: "900m", memory: 3100Mi' in text and 'cpu: "3500m", memory: 28Gi' in text


def test_claims_benchmark_reports_memory_per_cached_workflow(tmp_path: Path) -> None:
    result = run_script("--claims", "3", "--steady", "--state-dir", str(tmp_path))
    assert result["claims"] == 3 and result["claims_running"] == 3
    for key in ("rss_per_cached_workflow_kib", "worker_rss_mb_before", "worker_rss_mb_after", "seconds_to_steady"):
        assert isinstance(result[key], float | int), key


def test_pods_benchmark_binds_every_pod(tmp_path: Path) -> None:
    result = run_script("--pods", "2", "--in-memory-temporal", "--state-dir", str(tmp_path), timeout=120.0)
    assert result["pods"] == 2 and result["pods_bound"] == 2
    assert isinstance(result["nodes"], int) and result["nodes"] >= 1
    for key in ("seconds_to_all_bound", "worker_rss_p95_mb", "worker_rss_max_mb", "seconds_to_first_create_fleet"):
        assert isinstance(result[key], float | int), key
