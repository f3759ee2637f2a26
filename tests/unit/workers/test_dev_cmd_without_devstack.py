"""`nodeflow` without the dev stack installed (the worker image): every other command works, and
`nodeflow dev` says how to install it instead of failing on an import."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from workers.cli import main


@pytest.fixture
def no_devstack(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "devstack" or m.startswith("devstack.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "devstack", None)  # `import devstack...` raises ModuleNotFoundError


@pytest.mark.usefixtures("no_devstack")
def test_dev_explains_how_to_install_the_dev_stack(capsys: Any) -> None:
    assert main(["dev"]) == 2
    assert "dev stack is not installed" in capsys.readouterr().err


@pytest.mark.usefixtures("no_devstack")
def test_help_lists_every_command_without_the_dev_stack(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "dev" in out and "crds" in out
