"""cloudprovider.aws.launch.authorization: ValidationSucceeded from dry runs of the launch calls, and how long a
verdict is kept."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from apis.ec2nodeclass import EC2NodeClass
from cloudprovider.aws.launch.authorization import FAILED_TTL_SECONDS, PASSED_TTL_SECONDS, AuthorizationChecks, DryRun

NODE_CLASS = EC2NodeClass.model_validate(
    {
        "metadata": {"name": "default"},
        "spec": {
            "role": "NodeRole",
            "subnetSelectorTerms": [{"id": "subnet-1"}],
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
        },
    }
)
RUNS = [DryRun("CreateFleet", {}), DryRun("CreateLaunchTemplate", {}), DryRun("RunInstances", {})]


class EC2:
    """Answers each dry run with DryRunOperation, or the code set for its operation."""

    def __init__(self) -> None:
        self.codes: dict[str, str] = {}
        self.calls: list[str] = []

    def _answer(self, operation: str) -> Any:
        self.calls.append(operation)
        code = self.codes.get(operation, "DryRunOperation")
        raise ClientError({"Error": {"Code": code, "Message": code}}, operation)

    def create_fleet(self, **_: Any) -> Any:
        return self._answer("CreateFleet")

    def create_launch_template(self, **_: Any) -> Any:
        return self._answer("CreateLaunchTemplate")

    def run_instances(self, **_: Any) -> Any:
        return self._answer("RunInstances")


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_call_is_checked_and_a_pass_is_kept_an_hour() -> None:
    ec2, clock = EC2(), Clock()
    checks = AuthorizationChecks(ec2, clock)  # type: ignore[arg-type]
    assert checks.check(NODE_CLASS, lambda: RUNS) == ("True", "ValidationSucceeded", "")
    assert ec2.calls == ["CreateFleet", "CreateLaunchTemplate", "RunInstances"]
    clock.now += PASSED_TTL_SECONDS - 1
    checks.check(NODE_CLASS, lambda: RUNS)
    assert len(ec2.calls) == 3, "kept"
    clock.now += 2
    checks.check(NODE_CLASS, lambda: RUNS)
    assert len(ec2.calls) == 6


def test_a_refused_call_fails_with_karpenters_reason_and_is_looked_at_again_a_minute_later() -> None:
    ec2, clock = EC2(), Clock()
    ec2.codes["CreateLaunchTemplate"] = "UnauthorizedOperation"
    checks = AuthorizationChecks(ec2, clock)  # type: ignore[arg-type]
    status, reason, message = checks.check(NODE_CLASS, lambda: RUNS)
    assert (status, reason) == ("False", "CreateLaunchTemplateAuthCheckFailed")
    assert message.startswith("Controller isn't authorized to call ec2:CreateLaunchTemplate: EC2NodeClass default")
    ec2.codes.clear()  # the policy is fixed
    assert checks.check(NODE_CLASS, lambda: RUNS)[0] == "False", "within the minute: the kept verdict"
    clock.now += FAILED_TTL_SECONDS + 1
    assert checks.check(NODE_CLASS, lambda: RUNS)[0] == "True"


def test_a_throttled_or_unexpected_answer_is_no_verdict_and_is_not_kept() -> None:
    ec2 = EC2()
    checks = AuthorizationChecks(ec2, Clock())  # type: ignore[arg-type]
    ec2.codes["CreateFleet"] = "RequestLimitExceeded"
    assert checks.check(NODE_CLASS, lambda: RUNS)[:2] == ("Unknown", "DryRunThrottled")
    ec2.codes["CreateFleet"] = "InvalidParameterValue"
    assert checks.check(NODE_CLASS, lambda: RUNS)[:2] == ("Unknown", "DryRunInconclusive")
    ec2.codes.clear()
    assert checks.check(NODE_CLASS, lambda: RUNS)[0] == "True"


def test_with_dry_runs_off_nothing_is_called() -> None:
    ec2 = EC2()
    checks = AuthorizationChecks(ec2, Clock(), dry_run=False)  # type: ignore[arg-type]
    assert checks.check(NODE_CLASS, lambda: RUNS)[0] == "True" and ec2.calls == []
