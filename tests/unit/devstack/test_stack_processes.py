"""Child processes, ports and the Temporal command line of the dev stack."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from devstack.stack import ports
from devstack.stack.children import ChildProcess, stop_all
from devstack.stack.ports import PortInUseError, check_free, free_port, resolve, wait_for
from devstack.temporal import TemporalDevServer, TemporalPorts, TemporalStartError, server_args, start_failure_excerpt
from workers.cli.dev import stack_config


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def output(child: ChildProcess) -> str:
    """What the child printed: its log without the command-line header lines."""
    return "\n".join(line for line in child.log_path.read_text().splitlines() if not line.startswith("---"))


def python_child(tmp_path: Path, code: str, grace: float = 5.0) -> ChildProcess:
    return ChildProcess("t", [sys.executable, "-c", code], tmp_path / "logs" / "t.log", grace_seconds=grace)


def test_a_child_runs_in_its_own_process_group_and_logs_to_its_file(tmp_path: Path) -> None:
    child = python_child(tmp_path, "import os, time; print('pgid', os.getpgid(0), flush=True); time.sleep(60)")
    child.start()
    try:
        assert child.pid is not None
        wait_for(lambda: "pgid" in output(child), "child output", 10)
        assert f"pgid {child.pid}" in output(child)
        assert os.getpgid(child.pid) != os.getpgid(0)
    finally:
        child.stop()
    assert not child.running()
    assert child.exit_code() == -15


def test_a_child_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    child = python_child(tmp_path, code, grace=0.3)
    child.start()
    wait_for(lambda: "up" in output(child), "child start", 10)
    child.stop()
    assert child.exit_code() == -9


def test_stop_also_ends_grandchildren(tmp_path: Path) -> None:
    code = (
        "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        " print('grandchild', p.pid, flush=True); time.sleep(60)"
    )
    child = python_child(tmp_path, code)
    child.start()
    wait_for(lambda: "grandchild" in output(child), "grandchild start", 10)
    grandchild = int(output(child).split("grandchild")[-1].split()[0])
    stop_all([child], grace_seconds=2)
    wait_for(lambda: not alive(grandchild), "grandchild exit", 5)


def test_a_child_can_be_restarted(tmp_path: Path) -> None:
    child = python_child(tmp_path, "import time; time.sleep(60)")
    child.start()
    first = child.pid
    child.stop(kill=True)
    child.start()
    try:
        assert child.running() and child.pid != first
        with pytest.raises(RuntimeError, match="already running"):
            child.start()
    finally:
        child.stop()


def test_a_taken_port_is_named_with_its_flag() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port} \\(--kube-port\\) is already in use"):
            check_free(port, "--kube-port")


def test_port_zero_resolves_to_a_free_port_and_bad_ports_are_refused() -> None:
    port = resolve(0, "--moto-port")
    check_free(port, "--moto-port")
    with pytest.raises(ValueError, match="--moto-port 70000 is not a TCP port"):
        resolve(70000, "--moto-port")


def test_wait_for_fails_fast_when_the_process_is_gone() -> None:
    with pytest.raises(RuntimeError, match="exited before it was ready"):
        wait_for(lambda: False, "thing", 30, alive=lambda: False)
    with pytest.raises(TimeoutError, match="not ready within"):
        wait_for(lambda: False, "thing", 0)


def test_temporal_command_line_has_every_port_the_db_and_search_attributes(tmp_path: Path) -> None:
    argv = server_args(Path("/bin/temporal"), TemporalPorts(1, 2, 3, 4), tmp_path / "t.db", False,
                       stack_config(start_worker=False).search_attributes)  # fmt: skip
    text = " ".join(argv)
    assert "--ip 127.0.0.1 --port 1 --ui-port 2 --http-port 3 --metrics-port 4" in text
    assert f"--db-filename {tmp_path / 't.db'}" in text
    assert "--sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal" in text
    assert argv[-1] == "--headless"
    names = [argv[i + 1] for i, a in enumerate(argv) if a == "--search-attribute"]
    assert names == [
        "NodePool=Keyword", "InstanceType=Keyword", "Zone=Keyword", "CapacityType=Keyword", "NodeName=Keyword",
        "Phase=Keyword",
    ]  # fmt: skip


def test_temporal_in_memory_with_ui_has_no_db_and_no_headless() -> None:
    argv = server_args(Path("/bin/temporal"), TemporalPorts(1, 2, 3, 4), None, True, [])
    assert "--db-filename" not in argv and "--headless" not in argv


def test_free_ports_are_picked_below_the_ephemeral_range() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    if low - 20000 < 1000:
        pytest.skip("the ephemeral range leaves no room below it")
    picked = [free_port() for _ in range(10)]
    assert all(20000 <= p < low for p in picked)


GO_PANIC_LOG = "\n".join(
    [
        "--- temporal server start-dev ...",
        'time=2026-11-24T10:00:00 level=ERROR msg="Failed to start gRPC listener" error="listen tcp '
        '127.0.0.1:41017: bind: address already in use" service=history',
        "panic: Failed to start gRPC listener",
        "",
        "goroutine 1 [running]:",
        *[f"frame{i}()\n\t/src/x.go:{i} +0x52" for i in range(40)],
    ]
)


def test_a_start_failure_shows_the_cause_a_panic_printed_above_its_stack_trace() -> None:
    excerpt = start_failure_excerpt(GO_PANIC_LOG)
    lines = excerpt.splitlines()
    assert "bind: address already in use" in lines[0] and lines[1] == "panic: Failed to start gRPC listener"
    assert lines[-1] == "\t/src/x.go:39 +0x52" and "..." in lines


def test_a_dev_server_that_exits_while_starting_says_so_and_why(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = TemporalPorts(free_port(), free_port(), taken.getsockname()[1], free_port())
        server = TemporalDevServer(ports, None, False, tmp_path / "temporal.log")
        with pytest.raises(TemporalStartError, match=r"HTTP port .* address already in use") as failure:
            server.restart(timeout=30, attempts=2)
    assert failure.value.exited
    assert (tmp_path / "temporal.log").read_text().count("address already in use") == 2  # tried twice


def test_a_port_picked_by_another_process_is_not_picked_again_while_reserved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stacks started side by side pick ports before their servers bind them: a pick is shared through
    the picks file, so two pickers never get the same port, and a pick expires after RESERVE_SECONDS."""
    monkeypatch.setattr(ports, "PICKS_FILE", tmp_path / "picks.json")
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: ports.PICK_RANGE_LOW + 1000)  # 1,000 ports to pick from
    picks: list[list[int]] = [[], []]

    def pick(into: list[int]) -> None:
        into.extend(free_port() for _ in range(200))

    threads = [threading.Thread(target=pick, args=(into,)) for into in picks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(picks[0]) | set(picks[1])) == 400  # without the file, 400 picks of 1,000 would repeat
    recorded = json.loads((tmp_path / "picks.json").read_text())
    assert {int(port) for port in recorded} == set(picks[0]) | set(picks[1])

    monkeypatch.setattr(ports, "RESERVE_SECONDS", 0.0)
    free_port()
    assert len(json.loads((tmp_path / "picks.json").read_text())) == 1  # expired picks are dropped


def test_an_unreadable_picks_file_counts_as_no_picks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "picks.json").write_text("not json")
    monkeypatch.setattr(ports, "PICKS_FILE", tmp_path / "picks.json")
    port = free_port()
    assert json.loads((tmp_path / "picks.json").read_text()).keys() == {str(port)}
