"""Reading manifests from files and directories (the I/O around the pure apis.manifests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from apis.manifests import ManifestError
from workers.cli.manifest_files import load_files


def test_load_files_reads_files_and_directories_in_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("name: b\n")
    (tmp_path / "a.yml").write_text("name: a\n---\nname: a2\n")
    (tmp_path / "notes.txt").write_text("not a manifest")
    single = tmp_path / "single.json"
    single.write_text('{"name": "json"}')
    docs = load_files([tmp_path, single], {})
    assert [d["name"] for d in docs] == ["a", "a2", "b", "json", "json"]


def test_load_files_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="cannot read the file"):
        load_files([tmp_path / "missing.yaml"])
