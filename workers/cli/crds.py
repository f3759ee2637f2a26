"""`nodeflow crds DIRECTORY`: write the CustomResourceDefinitions generated from the models in apis/
(`apis.crds.render_crds`, pure) into DIRECTORY, only the files whose content changed. With `--check`, write
nothing: list stale or missing files on stderr and exit 1 if there are any (0 when all are fresh).

    nodeflow crds deploy/crds           # make crds
    nodeflow crds --check deploy/crds   # in CI: fails when the committed CRDs are stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from apis import crds

EXIT_FRESH = 0
EXIT_STALE = 1


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("crds", help="write (or --check) the CRDs generated from the API models",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("directory", type=Path, help="where the CRD files live (deploy/crds)")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 when a file is stale or missing")
    p.set_defaults(func=run)


def read_current(directory: Path, names: list[str]) -> dict[str, str | None]:
    """The content of each named file in `directory`, None for a missing one."""
    return {
        name: (directory / name).read_text(encoding="utf-8") if (directory / name).exists() else None for name in names
    }


def run(args: argparse.Namespace) -> int:
    directory: Path = args.directory
    rendered = crds.render_crds()
    stale = crds.stale_files(rendered, read_current(directory, sorted(rendered)))
    if args.check:
        for name in stale:
            print(f"stale: {directory / name} (run `make crds`)", file=sys.stderr)
        return EXIT_STALE if stale else EXIT_FRESH
    directory.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (directory / name).write_text(rendered[name], encoding="utf-8")
        print(f"wrote {directory / name}")
    return EXIT_FRESH
