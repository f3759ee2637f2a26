"""The commands an operator runs take kubectl's `--kubeconfig` and `--context`, and without them find the
cluster as kubectl does (kube.config.resolve_api_client); with no credentials anywhere they fail in one
message naming what was tried, without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workers import cli

REPO = Path(__file__).resolve().parents[3]

COMMANDS = [
    ["status"],
    ["status", "n"],
    ["drain", "n"],
    ["expire", "n"],
    ["replace", "n"],
    ["explain", "n"],
    ["simulate", "--disruption", "--from-cluster"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_ops_command_takes_kubeconfig_and_context(command: list[str]) -> None:
    argv = [*command, "--kubeconfig", "k.yaml", "--context", "prod"]
    args = cli.build_parser(argv).parse_args(argv)
    assert (args.kubeconfig, args.context) == ("k.yaml", "prod") and callable(args.func)


def no_credentials_env(home: Path) -> dict[str, str]:
    """This process's environment with an empty HOME, and no KUBECONFIG, NODEFLOW_KUBECONFIG or pod."""
    dropped = ("KUBECONFIG", "NODEFLOW_KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "HOME": str(home), "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["explain", "ip-10-0-1-1", "--temporal-address", "127.0.0.1:1"], 1),
        (["drain", "ip-10-0-1-1", "--temporal-address", "127.0.0.1:1"], 1),
        (["simulate", "--disruption", "--from-cluster"], 2),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_without_credentials_the_message_names_everything_tried(tmp_path: Path, command: list[str], code: int) -> None:
    argv = [sys.executable, "-m", "workers.cli", *command]
    done = subprocess.run(argv, capture_output=True, text=True, env=no_credentials_env(tmp_path), cwd=REPO, timeout=60)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    for part in ("no --kubeconfig (or NODEFLOW_KUBECONFIG)", "KUBECONFIG not set", "~/.kube/config does not exist",
                 "not in a pod (KUBERNETES_SERVICE_HOST unset)"):  # fmt: skip
        assert part in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_missing_kubeconfig_named_by_the_flag_is_named_in_the_error(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "workers.cli", "explain", "n", "--kubeconfig", str(tmp_path / "nope")]
    done = subprocess.run(argv, capture_output=True, text=True, env=no_credentials_env(tmp_path), cwd=REPO, timeout=60)
    assert done.returncode == 1 and f"--kubeconfig {tmp_path / 'nope'}: no such file" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
