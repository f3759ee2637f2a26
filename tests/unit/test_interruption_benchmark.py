"""benchmarks/interruption.py's pure parts: its arguments, the disrupted verdict and the distributions
it reports (the stack run itself is the benchmark's, see benchmarks/README.md)."""

from __future__ import annotations

import pytest

from benchmarks import interruption as bench


def test_defaults_and_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    args = bench.parse_args([])
    assert (args.nodes, args.timeout, args.state_dir) == (10, 300.0, None)
    for argv, wanted in ((["--nodes", "0"], "--nodes 0"), (["--timeout", "0"], "--timeout 0")):
        with pytest.raises(SystemExit) as exited:
            bench.parse_args(argv)
        assert exited.value.code == 2
        assert wanted in capsys.readouterr().err


def test_a_node_is_disrupted_when_its_claim_is_deleting_or_gone_or_it_is_tainted() -> None:
    claim = {"metadata": {"name": "c"}}
    node = {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "other", "effect": "NoSchedule"}]}}
    assert not bench._disrupted(claim, node)
    assert bench._disrupted(None, node)
    assert bench._disrupted({"metadata": {"name": "c", "deletionTimestamp": "2026-11-24T10:00:00Z"}}, node)
    tainted = {"spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}}
    assert bench._disrupted(claim, tainted)


def test_distribution_is_nearest_rank_and_null_when_empty() -> None:
    assert bench.distribution([]) == {"count": 0, "p50": None, "p95": None, "max": None}
    values = [float(v) for v in range(1, 11)]
    assert bench.distribution(values) == {"count": 10, "p50": 5.0, "p95": 10.0, "max": 10.0}
