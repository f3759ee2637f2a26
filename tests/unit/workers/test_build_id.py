"""The worker's build id: the distribution's version and a digest of the workflow code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workers.temporal.build_id import build_id, build_labels, workflow_code_digest


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


def test_build_info_names_the_version_runtime_architecture_and_the_images_revision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NODEFLOW_REVISION", "0123abcd")
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    labels = build_labels()
    assert labels["commit"] == "0123abcd" and labels["goarch"] == "amd64"
    assert re.fullmatch(r"python3\.\d+\.\d+", labels["goversion"])
    assert labels["version"] in build_id()
    monkeypatch.delenv("NODEFLOW_REVISION")
    monkeypatch.setattr("platform.machine", lambda: "aarch64")
    assert (build_labels()["commit"], build_labels()["goarch"]) == ("", "arm64")
