"""How the suite is spread over pytest-xdist workers (`make test` runs `pytest -n 4 --dist loadgroup`).

Most of the suite's wall time is end-to-end tests waiting on the local stack (a launch, a controller
round, a validation period), not using the CPU, so several run at once on two cores. Each module
stays on one worker (its module-scoped stack or server is booted once), except the end-to-end tests
on the shared stack, which go one by one to whichever worker is free (each worker has its own shared
stack, see tests/e2e/conftest.py). The modules that boot a stack of their own go first, the shared
stack's tests next and the quick tests last, so the longest work starts first and the quick tests fill
the gaps at the end.
"""

from __future__ import annotations

import pytest


def uses_shared_stack(item: pytest.Item) -> bool:
    return "shared_stack" in getattr(item, "fixturenames", ())


def start_order(item: pytest.Item) -> int:
    if item.get_closest_marker("e2e") is None:
        return 2
    return 1 if uses_shared_stack(item) else 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=start_order)  # stable: each module keeps its order
    for item in items:
        if not uses_shared_stack(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))
