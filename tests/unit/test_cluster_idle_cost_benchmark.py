"""benchmarks/cluster_idle_cost.py's arguments (the stack run itself is the benchmark's, see
benchmarks/README.md)."""

from __future__ import annotations

import pytest

from benchmarks import cluster_idle_cost as bench


def test_defaults_and_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    args = bench.parse_args([])
    assert (args.window, args.settle, args.one_pod_nodes, args.pods, args.churn) == (300.0, 30.0, 0, 0, 0.0)
    refused = (
        (["--window", "0"], "--window 0"),
        (["--settle", "-1"], "--settle -1"),
        (["--one-pod-nodes", "-1"], "--one-pod-nodes -1"),
        (["--pods", "-1"], "--pods -1"),
        (["--pods", "10", "--one-pod-nodes", "10"], "not with --one-pod-nodes"),
        (["--churn", "-1"], "--churn -1"),
        (["--node-reports", "-2"], "--node-reports -2"),
    )
    for argv, wanted in refused:
        with pytest.raises(SystemExit) as exited:
            bench.parse_args(argv)
        assert exited.value.code == 2
        assert wanted in capsys.readouterr().err
