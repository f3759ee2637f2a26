"""What the run-level checks of tests/iam_coverage.py and tests/rbac_coverage.py share: whether a pytest run
collected every test of some directories (only then may a grant that nothing needed fail the run), and how a
check's problems fail the session."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest


def narrowed(option: Any) -> bool:
    """Whether pytest's options leave tests out or run none (-k, -m, --deselect, --ignore, --co)."""
    names = ("keyword", "markexpr", "deselect", "ignore", "ignore_glob", "collectonly")
    return any(getattr(option, name, None) for name in names)


def covers_every_test(dirs: Iterable[Path], args: list[str], invocation_dir: Path, narrowed: bool) -> bool:
    """Whether a run with these command-line paths collects every test below each of `dirs`; `narrowed`:
    options leave some out (see `narrowed`)."""
    if narrowed:
        return False
    paths = [(invocation_dir / a).resolve() for a in args if "::" not in a] if args else [invocation_dir]
    if len(paths) != len(args or ["."]):
        return False
    return all(any(d == p or p in d.parents for p in paths) for d in dirs)


def fail_session(session: pytest.Session, title: str, problems: list[str]) -> None:
    """Fail the session (after its tests ran) with `problems` under `title`, when there are any."""
    if not problems:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_sep("=", title)
        for line in problems:
            reporter.write_line(line, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
