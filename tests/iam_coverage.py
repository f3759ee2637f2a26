"""The IAM policy against the AWS operations nodeflow calls: evaluation helpers and the end-of-run check.

Evaluation is by action only (a statement's `Action` patterns, `*` and `?` wildcards, case-insensitive);
the conditions and resources are checked by the unit tests of the builder
(tests/unit/cloudprovider/test_iam_policy.py).

The end-of-run check: tests/conftest.py points `DEVSTACK_AWS_CALL_LOG` at a fresh directory before the
run (xdist workers and the stacks' services processes inherit it), so every moto server of the run
records the operations its clients call (devstack.aws.calls). Those of nodeflow carry the app id
`nodeflow` (`cloudprovider.aws.factory.USER_AGENT_APP_ID`); the seed's, the kubelet's and the tests'
own calls carry none. At the end of the session (in the xdist controller, after every worker and stack
has stopped) `coverage_problems` compares them with the policy: a recorded call the policy does not
grant always fails the run; a grant no recorded call needs fails it only when the run covered every
integration and end-to-end test (otherwise most calls were never made).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from cloudprovider.aws.factory import USER_AGENT_APP_ID
from cloudprovider.aws.iam_policy import controller_policy, needed_actions
from tests.run_coverage import covers_every_test, narrowed

__all__ = ["coverage_problems", "covers_every_aws_test", "narrowed", "nodeflow_calls", "policy_problems"]

ROOT = Path(__file__).resolve().parents[1]
# The test directories whose runs exercise every AWS call nodeflow makes.
COVERING_DIRS = (ROOT / "tests" / "e2e", ROOT / "tests" / "integration" / "cloudprovider")


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def granted_patterns(policy: dict[str, Any]) -> list[str]:
    """The Action patterns of the policy's Allow statements."""
    return [a for s in policy["Statement"] if s["Effect"] == "Allow" for a in _as_list(s["Action"])]


def is_granted(policy: dict[str, Any], action: str) -> bool:
    """Whether some Allow statement names `action` ("service:Action"), wildcards and case aside."""
    return any(fnmatchcase(action.lower(), p.lower()) for p in granted_patterns(policy))


def policy_problems(policy: dict[str, Any], called: set[str]) -> list[str]:
    """Calls the policy does not grant, and grants that no call needs (itself or as part of another)."""
    needed = needed_actions(called)
    missing = [f"not granted: {a}" for a in sorted(needed) if not is_granted(policy, a)]
    unused = [
        f"granted but never needed: {p}"
        for p in sorted(set(granted_patterns(policy)))
        if not any(fnmatchcase(a.lower(), p.lower()) for a in needed)
    ]
    return missing + unused


def nodeflow_calls(recorded: set[str]) -> set[str]:
    """The operations of recorded lines `<app id> <service>:<Action>` that nodeflow made."""
    return {line.split(" ", 1)[1] for line in recorded if line.split(" ", 1)[0] == USER_AGENT_APP_ID}


def covers_every_aws_test(args: list[str], invocation_dir: Path, narrowed: bool) -> bool:
    """Whether a run with these command-line paths collects every test of COVERING_DIRS; `narrowed`:
    options leave some out (tests.run_coverage.narrowed)."""
    return covers_every_test(COVERING_DIRS, args, invocation_dir, narrowed)


def coverage_problems(called: set[str], complete: bool) -> list[str]:
    """`policy_problems` of nodeflow's recorded calls; only the missing grants unless `complete`."""
    problems = policy_problems(controller_policy("nodeflow-dev"), called)
    return problems if complete else [p for p in problems if p.startswith("not granted")]
