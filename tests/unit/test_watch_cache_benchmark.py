"""benchmarks/watch_cache.py at a tiny size: its JSON fields (benchmarks/README.md), and its argument
check. No figure is asserted beyond the kept pods being no larger than the decoded ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import watch_cache as bench

REPO = Path(__file__).resolve().parents[2]


def test_it_reports_memory_and_time_per_pod() -> None:
    # A process of its own, as the benchmark is run: tracemalloc counts every thread's allocations, and a
    # test worker's process may hold threads of earlier tests (servers, exporters) that allocate meanwhile.
    command = [sys.executable, str(REPO / "benchmarks" / "watch_cache.py"), "--pods", "20"]
    out = json.loads(subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout)
    assert set(out) == {"benchmark", "pods", "json_bytes_per_pod", "plain_kib_per_pod", "kept_kib_per_pod",
                        "kept_mib", "apply_microseconds_per_event"}  # fmt: skip
    assert out["pods"] == 20 and out["json_bytes_per_pod"] > 3000
    assert 0 < out["kept_kib_per_pod"] <= out["plain_kib_per_pod"]


def test_no_pods_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        bench.parse_args(["--pods", "0"])
    assert exited.value.code == 2 and "--pods 0" in capsys.readouterr().err
