"""The build id a worker reports to Temporal (its WorkflowTaskCompleted events and its pollers carry it; the
Temporal UI shows it per workflow task).

Without one, the Temporal SDK makes one at every worker start by hashing the bytecode of every loaded
module: about 1,200 modules here, 0.36 s of CPU per start, for an id nobody can read. nodeflow sends
`nodeflow-<version>+<hash>`: the installed distribution's version, and the first 12 hex digits of a hash
of the workflow code (every `.py` file of the `workflows` package, by name and content), the code whose
command sequence decides whether a history replays. Two workers with the same id run the same workflow
code. nodeflow does not pin runs to build ids (README, "Versioning"), so the id is for reading only.

`build_labels` are the labels of `karpenter_build_info`, Karpenter's names kept so that dashboards joining
on them work: `version` the distribution's, `goversion` the Python runtime's (`python3.11.7`), `goarch` the
machine's in Go's spelling (`amd64`, `arm64`), `commit` the source revision the image was built from (the
image's NODEFLOW_REVISION, from `docker build --build-arg REVISION=...`; "" when not given)."""

from __future__ import annotations

import hashlib
import os
import platform
from importlib import metadata
from pathlib import Path

import workflows

DISTRIBUTION = "nodeflow"
REVISION_ENV = "NODEFLOW_REVISION"
GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def workflow_code_digest(package_dir: Path) -> str:
    """12 hex digits of a hash of the `.py` files directly in `package_dir`, by name and content, in name
    order; "" when there are none (an installation without sources)."""
    digest = hashlib.sha256()
    files = sorted(package_dir.glob("*.py"))
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12] if files else ""


def version() -> str:
    """The installed distribution's version, `unknown` when it is not installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def build_id() -> str:
    """`nodeflow-<version>+<digest>` (see the module docstring); `+<digest>` is left out when the workflow
    sources are not installed."""
    digest = workflow_code_digest(Path(next(iter(workflows.__path__))))
    return f"{DISTRIBUTION}-{version()}+{digest}" if digest else f"{DISTRIBUTION}-{version()}"


def build_labels() -> dict[str, str]:
    """The labels of `karpenter_build_info` (see the module docstring)."""
    machine = platform.machine().lower()
    return {
        "version": version(),
        "goversion": f"python{platform.python_version()}",
        "goarch": GO_ARCH.get(machine, machine),
        "commit": os.environ.get(REVISION_ENV, ""),
    }
