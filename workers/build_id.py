"""The build id a worker reports to Temporal (its WorkflowTaskCompleted events and its pollers carry it; the
Temporal UI shows it per workflow task).

Without one, the Temporal SDK makes one at every worker start by hashing the bytecode of every loaded
module: about 1,200 modules here, 0.36 s of CPU per start, for an id nobody can read. nodeflow sends
`nodeflow-<version>+<hash>`: the installed distribution's version, and the first 12 hex digits of a hash
of the workflow code (every `.py` file of the `workflows` package, by name and content), the code whose
command sequence decides whether a history replays. Two workers with the same id run the same workflow
code. nodeflow does not pin runs to build ids (README, "Versioning"), so the id is for reading only."""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

import workflows

DISTRIBUTION = "nodeflow"


def workflow_code_digest(package_dir: Path) -> str:
    """12 hex digits of a hash of the `.py` files directly in `package_dir`, by name and content, in name
    order; "" when there are none (an installation without sources)."""
    digest = hashlib.sha256()
    files = sorted(package_dir.glob("*.py"))
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12] if files else ""


def build_id() -> str:
    """`nodeflow-<version>+<digest>` (see the module docstring); `+<digest>` is left out when the workflow
    sources are not installed, and the version reads `unknown` when the distribution is not."""
    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = "unknown"
    digest = workflow_code_digest(Path(next(iter(workflows.__path__))))
    return f"{DISTRIBUTION}-{version}+{digest}" if digest else f"{DISTRIBUTION}-{version}"
