"""Reading Karpenter manifests from files and directories: the I/O around the pure `apis.manifests`.

docs = load_files(["nodepool.yaml", "manifests/"], {"CLUSTER_NAME": "dev"})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from apis.manifests import MANIFEST_SUFFIXES, ManifestError, load_documents


def manifest_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files named, with directories expanded to their .yaml/.yml/.json files (sorted, not recursive)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES))
        else:
            files.append(path)
    return files


def load_files(paths: Iterable[str | Path], variables: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The documents of every file in order (see `apis.manifests.load_documents`, which names the file and
    line of a syntax error in its ManifestError); a file that cannot be read raises ManifestError too."""
    documents: list[dict[str, Any]] = []
    for path in manifest_files(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise ManifestError(f"cannot read the file: {err.strerror or err}", str(path)) from err
        documents.extend(load_documents(text, variables, source=str(path)))
    return documents
