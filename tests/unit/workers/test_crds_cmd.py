"""`nodeflow crds`: writes the CRDs apis.crds renders, and `--check` fails on stale or missing files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apis import crds
from workers.cli import main

FILES = sorted(crds.render_crds())


def test_check_mode_fails_on_stale_files_and_write_mode_fixes_them(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / FILES[0]).write_text("stale\n")
    assert main(["crds", "--check", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert all(name in err for name in FILES), err
    assert main(["crds", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == FILES
    assert main(["crds", "--check", str(tmp_path)]) == 0


def test_write_mode_leaves_fresh_files_alone(tmp_path: Path, capsys: Any) -> None:
    assert main(["crds", str(tmp_path / "new")]) == 0
    capsys.readouterr()
    assert main(["crds", str(tmp_path / "new")]) == 0
    assert capsys.readouterr().out == ""
