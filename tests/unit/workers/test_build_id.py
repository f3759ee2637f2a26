"""The worker's build id: the distribution's version and a digest of the workflow code."""

from __future__ import annotations

import re
from pathlib import Path

from workers.build_id import build_id, workflow_code_digest


def test_the_build_id_names_the_version_and_the_workflow_code() -> None:
    assert re.fullmatch(r"nodeflow-[\w.]+\+[0-9a-f]{12}", build_id())


def test_the_digest_follows_the_workflow_sources_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "nodeclaim.py").write_text("A = 1\n")
    (tmp_path / "notes.txt").write_text("not code")
    first = workflow_code_digest(tmp_path)
    (tmp_path / "notes.txt").write_text("still not code")
    assert workflow_code_digest(tmp_path) == first
    (tmp_path / "nodeclaim.py").write_text("A = 2\n")
    assert workflow_code_digest(tmp_path) != first
    (tmp_path / "nodeclaim.py").rename(tmp_path / "renamed.py")
    assert workflow_code_digest(tmp_path) not in (first, "")


def test_without_sources_there_is_no_digest(tmp_path: Path) -> None:
    assert workflow_code_digest(tmp_path) == ""
