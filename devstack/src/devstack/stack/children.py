"""Child processes of the dev stack: each in its own process group, its output in a log file, and
stopped with SIGTERM, then SIGKILL after a grace period.

Why a process group per child: Ctrl-C in a terminal signals the whole foreground group at once, so
children in the parent's group would die in arbitrary order before the parent can stop them in the
right one (worker first). In their own groups they hear only the parent, which signals the whole
group, so grandchildren go too.

On Linux each child also gets PR_SET_PDEATHSIG=SIGTERM, so a parent killed with SIGKILL (which runs no
`finally` and no `atexit`) still leaves no child behind. The kernel sends it when the *thread* that
started the child exits, so start children from a thread that outlives them (normally the main one).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


def _death_signal_hook() -> Callable[[], None] | None:
    """A preexec function that asks the kernel to SIGTERM the child when its parent dies, or None
    where prctl does not exist. Resolved before fork so the child only makes one libc call."""
    if not sys.platform.startswith("linux"):
        return None
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return None
    prctl = ctypes.CDLL(libc_name, use_errno=True).prctl

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    return hook


_PREEXEC = _death_signal_hook()


class ChildProcess:
    """One named child: `start()` launches `argv` with stdout and stderr appended to `log_path`;
    `stop()` ends its whole process group. Restartable: `start()` after `stop()` runs it again."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.grace_seconds = grace_seconds
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopped = False  # stop() has swept and reaped the current run

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        """Launch the child. Raises RuntimeError if it is already running."""
        if self.running():
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            out.write(f"\n--- {time.strftime('%Y-%m-%dT%H:%M:%S')} starting: {' '.join(self.argv)}\n".encode())
            out.flush()
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=_PREEXEC,
            )
        self._stopped = False
        log.info("started %s (pid %d), log %s", self.name, self._proc.pid, self.log_path)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def exit_code(self) -> int | None:
        """The exit status once the child has ended (negative: killed by that signal), else None."""
        return self._proc.poll() if self._proc else None

    def signal(self, signum: int) -> None:
        """Send `signum` to the child's whole process group (nothing if it has already ended)."""
        if self._proc is None or self._proc.poll() is not None:
            return
        try:
            os.killpg(self._proc.pid, signum)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float) -> bool:
        """True once the child has ended, False if it is still running after `timeout` seconds."""
        if self._proc is None:
            return True
        try:
            self._proc.wait(timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self, kill: bool = False) -> None:
        """SIGTERM the group and wait up to the grace period, then SIGKILL (at once if `kill`).
        Afterwards the group is also swept with SIGKILL, for grandchildren that ignored SIGTERM.
        Once done, further calls do nothing until the next start()."""
        if self._proc is None or self._stopped:
            return
        if kill:
            self.signal(signal.SIGKILL)
        else:
            self.signal(signal.SIGTERM)
            if not self.wait(self.grace_seconds):
                log.warning("%s did not stop within %.0fs of SIGTERM; sending SIGKILL", self.name, self.grace_seconds)
        self._kill_group()
        self._proc.wait()
        self._stopped = True
        log.info("stopped %s (exit %s)", self.name, self._proc.returncode)

    def _kill_group(self) -> None:
        assert self._proc is not None
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def log_text(self) -> str:
        """The child's whole log ("" when there is none yet)."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 20) -> str:
        """The last `lines` lines of the child's log, for error messages."""
        return "\n".join(self.log_text().splitlines()[-lines:])


def stop_all(children: Sequence[ChildProcess], grace_seconds: float) -> None:
    """SIGTERM every running child at once, wait for all with one shared deadline, then SIGKILL the rest."""
    for child in children:
        child.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    for child in children:
        child.wait(deadline - time.monotonic())
    for child in children:
        child.stop(kill=True)
