"""tests/iam_coverage.py: which runs check that every grant is used, and what the check reports."""

from __future__ import annotations

from types import SimpleNamespace

from cloudprovider.aws.iam_policy import API_ACTIONS
from tests.iam_coverage import ROOT, coverage_problems, covers_every_aws_test, narrowed, nodeflow_calls


def test_only_runs_that_collect_every_aws_test_are_complete() -> None:
    assert covers_every_aws_test([], ROOT, False)
    assert covers_every_aws_test(["tests"], ROOT, False)
    assert covers_every_aws_test([str(ROOT / "tests")], ROOT / "benchmarks", False)
    assert covers_every_aws_test(["tests/e2e", "tests/integration"], ROOT, False)
    assert not covers_every_aws_test(["tests/e2e"], ROOT, False)
    assert not covers_every_aws_test(["tests/e2e/test_safety.py", "tests/integration"], ROOT, False)
    assert not covers_every_aws_test(["tests"], ROOT, True)
    assert not covers_every_aws_test(["tests/e2e::x", "tests/integration"], ROOT, False)


def test_options_that_leave_tests_out_narrow_the_run() -> None:
    assert not narrowed(SimpleNamespace(keyword="", markexpr="", deselect=None, collectonly=False))
    assert narrowed(SimpleNamespace(keyword="launch", markexpr=""))
    assert narrowed(SimpleNamespace(markexpr="e2e"))
    assert narrowed(SimpleNamespace(collectonly=True))
    assert narrowed(SimpleNamespace(deselect=["tests/e2e/test_safety.py"]))


def test_only_nodeflows_calls_count() -> None:
    assert nodeflow_calls({"nodeflow ec2:CreateFleet", "- ec2:CreateVpc", "other iam:CreateRole"}) == {
        "ec2:CreateFleet"
    }


def test_unused_grants_fail_only_a_complete_run() -> None:
    some = {"ec2:DescribeImages"}
    assert coverage_problems(some, complete=False) == []
    assert "granted but never needed: ec2:TerminateInstances" in coverage_problems(some, complete=True)
    assert coverage_problems(set(API_ACTIONS), complete=True) == []
    assert coverage_problems({"ec2:DeleteVpc"}, complete=False) == ["not granted: ec2:DeleteVpc"]
