"""tests/iam_coverage.py: which runs check that every grant is used, and what the check reports."""

from __future__ import annotations

from cloudprovider.aws.iam_policy import API_ACTIONS
from tests.iam_coverage import ROOT, coverage_problems, covers_every_aws_test, nodeflow_calls


def test_only_runs_that_collect_every_aws_test_are_complete() -> None:
    assert covers_every_aws_test([], ROOT, "", "")
    assert covers_every_aws_test(["tests"], ROOT, "", "")
    assert covers_every_aws_test([str(ROOT / "tests")], ROOT / "benchmarks", "", "")
    assert covers_every_aws_test(["tests/e2e", "tests/integration"], ROOT, "", "")
    assert not covers_every_aws_test(["tests/e2e"], ROOT, "", "")
    assert not covers_every_aws_test(["tests/e2e/test_safety.py", "tests/integration"], ROOT, "", "")
    assert not covers_every_aws_test(["tests"], ROOT, "launch", "")
    assert not covers_every_aws_test(["tests"], ROOT, "", "e2e")
    assert not covers_every_aws_test(["tests/e2e::x", "tests/integration"], ROOT, "", "")


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
