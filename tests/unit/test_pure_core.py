"""apis/ and scheduling/ hold models and pure functions only: no file I/O and no command lines (the CLIs
and file reading live in workers/). import-linter forbids the I/O libraries and argparse; this checks the
built-in calls it cannot see."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ("apis", "scheduling")
IO_FUNCTIONS = {"open", "input", "print", "exec", "eval"}
IO_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes", "iterdir", "glob", "rglob", "mkdir", "unlink",
              "open", "exists", "is_file", "is_dir"}  # fmt: skip


def io_calls(source: str) -> list[str]:
    """`name(` or `.method(` calls of file or console I/O in `source`, as "line: call"."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in IO_FUNCTIONS:
            found.append(f"{node.lineno}: {func.id}(")
        elif isinstance(func, ast.Attribute) and func.attr in IO_METHODS:
            found.append(f"{node.lineno}: .{func.attr}(")
    return found


def test_the_scan_finds_file_reads() -> None:
    assert io_calls("from pathlib import Path\nPath('x').read_text()\nwith open('y') as f:\n    pass\n") == [
        "2: .read_text(",
        "3: open(",
    ]


@pytest.mark.parametrize("path", sorted(p for pkg in PURE_PACKAGES for p in (ROOT / pkg).rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))  # fmt: skip
def test_pure_modules_do_no_io(path: Path) -> None:
    assert io_calls(path.read_text(encoding="utf-8")) == [], f"{path.relative_to(ROOT)} does I/O: move it to workers/"
