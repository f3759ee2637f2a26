"""README.md is a door and docs/ the rooms behind it (issue 43): the README stays short, starts with the
two commands, links every page under docs/; every relative link of the README, docs/ and
benchmarks/README.md leads to a file that exists (and to a heading it has, for a #fragment); every
repository path they name (`kube/reflector.py`, `deploy/charts/nodeflow/values.yaml`) exists; and the
settings page lists every setting of the worker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workers.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
CHECKED = [README, *PAGES, ROOT / "benchmarks" / "README.md"]

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# A repository path: at least one folder, then a file name with one of these extensions.
PATH = re.compile(r"(?<![\w./~$<{-])((?:\w[\w.-]*/)+[\w.-]+\.(?:py|ya?ml|json|md|toml|txt))\b")


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation other than - and _ dropped, spaces to -."""
    text = re.sub(r"`|\*\*", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_the_readme_is_under_250_lines_and_starts_with_the_two_commands() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < 250, f"README.md has {len(lines)} lines; move detail to a page under docs/"
    assert lines[:6] == [
        "# nodeflow",
        "",
        "```bash",
        "make run    # the product on the embedded local stack: Temporal + UI, moto EC2, a Kubernetes API, the worker",
        "make test   # lint, types, import layering, and every test (unit, integration, end-to-end)",
        "```",
    ]


def test_every_docs_page_is_linked_from_the_readme() -> None:
    assert PAGES, "docs/ holds no page"
    targets = {t.split("#")[0] for t in LINK.findall(README.read_text())}
    assert "benchmarks/README.md" in targets
    missing = [name(p) for p in PAGES if name(p) not in targets]
    assert not missing, f"README.md does not link {missing}"


@pytest.mark.parametrize("page", CHECKED, ids=name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, fragment = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: {name(dest)} has no heading #{fragment}")
    assert not broken, f"{name(page)}: {broken}"


@pytest.mark.parametrize("page", CHECKED, ids=name)
def test_every_repository_path_named_exists(page: Path) -> None:
    """Modules move (issue 43); a page that names a file by its path must follow it, or name the
    capability and the command instead."""
    text = page.read_text()
    missing = sorted({p for p in PATH.findall(text) if not (ROOT / p).exists()})
    assert not missing, f"{name(page)} names paths that do not exist: {missing}"


def test_the_configuration_page_lists_every_setting() -> None:
    text = (DOCS / "configuration.md").read_text()
    fields = list(Settings.model_fields)
    missing = [f for f in fields if f"| `{f}` |" not in text]
    assert not missing, f"docs/configuration.md has no row for {missing}"
