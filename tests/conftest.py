"""How the suite is spread over pytest-xdist workers (`make test` runs `pytest -n 5 --dist loadgroup`).

Most of the suite's wall time is end-to-end tests waiting on the local stack (a launch, a controller
round, a validation period), not using the CPU, so several run at once on two cores. Each module
stays on one worker (its module-scoped stack or server is booted once), except the end-to-end tests
on the shared stack, which go one by one to whichever worker is free (each worker has its own shared
stack, see tests/e2e/conftest.py). The `long` end-to-end tests and modules (a minute or more) go first,
whatever their stack, then the other modules that boot a stack of their own, the shared stack's tests
next and the quick tests last: the longest work starts first and the quick tests fill the gaps at the end.
(Each worker holds the unit it runs and the next one, so a long test handed out late ends the run late.)
`make test` passes `--no-loadscope-reorder`: pytest-xdist would otherwise send the groups with the most
tests first, and the one-test chaos modules last.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from devstack.aws.calls import CALL_LOG_ENV, read_calls
from devstack.kube.access import AUTHZ_LOG_ENV, read_authz_log
from workers.heap import freeze_long_lived, tune_collector

_CALL_LOG_OWNED = pytest.StashKey[bool]()
_AUTHZ_LOG_OWNED = pytest.StashKey[bool]()


def uses_shared_stack(item: pytest.Item) -> bool:
    return "shared_stack" in getattr(item, "fixturenames", ())


def start_order(item: pytest.Item) -> int:
    """`long` end-to-end tests (a minute or more, on any stack) first, then modules with a stack of their
    own, then the shared stack's tests, then the rest."""
    if item.get_closest_marker("e2e") is None:
        return 3
    if item.get_closest_marker("long"):
        return 0
    return 2 if uses_shared_stack(item) else 1


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order and group the items. First among the hooks: pytest-xdist's own hook in each worker reads the
    `xdist_group` markers to name the groups (a nodeid suffix), so they must be on the items by then."""
    items.sort(key=start_order)  # stable: each module keeps its order
    for item in items:
        if not uses_shared_stack(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once collected: freeze what every test process holds until it ends (the imported product, moto,
    the Kubernetes client, the collected items) out of the cyclic collector, as the worker does
    (workers.heap). With CPython's thresholds each full collection walked that whole heap; with the
    worker's (set in pytest_configure, before collection imports anything) and the freeze, about a tenth
    of the unit tests' CPU is saved."""
    freeze_long_lived()


_GROUPS_LOST = pytest.StashKey[list[str]]()


def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """In the controller, per worker: every test outside tests/e2e must arrive with its group (the
    `@<group>` suffix pytest-xdist's loadgroup adds). Without it, modules are spread over workers and
    each boots its own stack, silently (pytest-dev/pytest-xdist#1386); the run fails at its end instead."""
    config = node.config
    if config.getvalue("dist") != "loadgroup":
        return
    lost = [i for i in ids if "@" not in i and not i.startswith("tests/e2e/")]
    if lost:
        config.stash[_GROUPS_LOST] = lost


# -- IAM policy coverage (tests/iam_coverage.py) -----------------------------------------------------


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    """The collector's thresholds (see pytest_collection_finish). In the controller (or a run without
    xdist): a fresh directory where every moto server of the run records the AWS calls it serves, and one
    where every Kubernetes emulator records its authorization decisions; workers and stacks inherit the
    variables. Each kept when already set (and then not checked at the end)."""
    tune_collector()
    if _is_xdist_worker(config):
        return
    if not os.environ.get(AUTHZ_LOG_ENV):  # the Kubernetes side (tests/rbac_coverage.py), likewise
        os.environ[AUTHZ_LOG_ENV] = tempfile.mkdtemp(prefix="nodeflow-kube-authz-")
        config.stash[_AUTHZ_LOG_OWNED] = True
    if os.environ.get(CALL_LOG_ENV):
        return
    os.environ[CALL_LOG_ENV] = tempfile.mkdtemp(prefix="nodeflow-aws-calls-")
    config.stash[_CALL_LOG_OWNED] = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every worker and stack stopped: nodeflow's recorded AWS calls against the IAM policy."""
    config = session.config
    lost = config.stash.get(_GROUPS_LOST, [])
    if lost:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"pytest-xdist lost the test groups ({len(lost)} tests without one, e.g. {lost[0]}): check the "
                "pytest and pytest-xdist versions (pyproject.toml)",
                red=True,
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if not _is_xdist_worker(config) and config.stash.get(_AUTHZ_LOG_OWNED, False):
        _check_rbac_coverage(session, exitstatus)
    if _is_xdist_worker(config) or not config.stash.get(_CALL_LOG_OWNED, False):
        return
    from tests.iam_coverage import coverage_problems, covers_every_aws_test, nodeflow_calls
    from tests.run_coverage import fail_session, narrowed

    directory = Path(os.environ[CALL_LOG_ENV])
    called = nodeflow_calls(read_calls(directory)) if directory.is_dir() else set()
    complete = exitstatus == 0 and covers_every_aws_test(
        list(config.args), config.invocation_params.dir, narrowed(config.option)
    )
    problems = coverage_problems(called, complete)
    shutil.rmtree(directory, ignore_errors=True)
    fail_session(
        session, "IAM policy coverage (tests/iam_coverage.py): the policy and the AWS calls disagree", problems
    )


# -- RBAC coverage (tests/rbac_coverage.py) ----------------------------------------------------------


def _check_rbac_coverage(session: pytest.Session, exitstatus: int) -> None:
    """After every worker and stack stopped: the worker's recorded Kubernetes requests against the chart's
    RBAC rules (a refused request always fails the run; an unneeded grant only after every e2e test)."""
    from tests.rbac_coverage import coverage_problems, covers_every_e2e_test
    from tests.run_coverage import fail_session, narrowed

    config = session.config
    directory = Path(os.environ[AUTHZ_LOG_ENV])
    records = read_authz_log(directory) if directory.is_dir() else []
    complete = exitstatus == 0 and covers_every_e2e_test(
        list(config.args), config.invocation_params.dir, narrowed(config.option)
    )
    problems = coverage_problems(records, complete)
    shutil.rmtree(directory, ignore_errors=True)
    title = "RBAC coverage (tests/rbac_coverage.py): the chart's rules and the worker's requests disagree"
    fail_session(session, title, problems)
