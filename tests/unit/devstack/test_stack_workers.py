"""DevStack's named worker replicas, with a stand-in worker command (no stack started): each has its
own log, HOSTNAME and probe port (kept across restarts), and one killed on purpose is not reported dead."""

from __future__ import annotations

import sys
from pathlib import Path

from devstack.stack import DevStack, DevStackConfig
from devstack.stack.ports import wait_for

# Prints its HOSTNAME and its arguments, then waits; `exit` as the HOSTNAME makes it exit at once.
FAKE_WORKER = (
    "import os, sys, time; print(os.environ['HOSTNAME'], ' '.join(sys.argv[1:]), flush=True); "
    "sys.exit(3) if os.environ['HOSTNAME'] == 'exit' else time.sleep(60)"
)


def started(stack: DevStack, name: str) -> str:
    """The line worker `name` printed (its log without the command-line header lines)."""
    log = stack.config.logs_dir / f"{name}.log"

    def printed() -> list[str]:
        text = log.read_text() if log.exists() else ""
        return [line for line in text.splitlines() if line and not line.startswith("---")]

    wait_for(lambda: bool(printed()), f"{name} output", 10)
    return printed()[-1]


def test_named_workers_run_side_by_side_with_their_own_log_hostname_and_probe_port(tmp_path: Path) -> None:
    config = DevStackConfig(state_dir=tmp_path, worker_command=[sys.executable, "-c", FAKE_WORKER])
    stack = DevStack(config)
    try:
        stack.start_worker()
        stack.start_worker("worker-b")
        lines = {name: started(stack, name) for name in ("worker", "worker-b")}
        assert lines["worker"].startswith("worker --temporal-address")
        assert lines["worker-b"].startswith("worker-b --temporal-address")
        ports = {name: stack.worker_probe_url(name).rsplit(":", 1)[1] for name in lines}
        assert ports["worker"] != ports["worker-b"]
        assert all(f"--health-probe-port {ports[name]}" in line for name, line in lines.items())
        assert set(stack.pids()) == {"worker", "worker-b"} and stack.worker_names() == ["worker", "worker-b"]

        stack.kill_worker("worker-b")
        assert stack.dead_children() == []  # killed on purpose
        stack.start_worker("worker-b")
        assert stack.worker_probe_url("worker-b").endswith(f":{ports['worker-b']}")

        stack.start_worker("exit")
        wait_for(lambda: bool(stack.dead_children()), "the exiting worker reported", 10)
        assert [line.split()[0] for line in stack.dead_children()] == ["exit"]
    finally:
        stack.stop()
    assert stack.dead_children() == []
