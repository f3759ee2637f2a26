"""benchmarks/in_flight.py at a tiny size: its JSON fields (benchmarks/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_prints_its_fields_as_json() -> None:
    command = [sys.executable, str(REPO / "benchmarks" / "in_flight.py"), "--claims", "3", "--runs", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["claims"] == 3 and result["runs"] == 1
    assert set(result) == {
        "claims", "runs", "cpu_seconds_per_solve_min", "cpu_seconds_per_solve_median",
        "cpu_seconds_per_solve_median_kept_options", "targets", "targets_met",
    }  # fmt: skip
