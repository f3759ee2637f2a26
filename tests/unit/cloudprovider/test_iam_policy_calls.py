"""Every boto3 client method the product calls is granted by the IAM policy, and every grant is needed.

A static scan (no AWS, fast): in cloudprovider/, activities/ and workers/, an attribute whose name is an
operation of an AWS service (botocore's method name, e.g. `create_fleet`) read from a receiver named
after that service (`ec2`, `self._ec2`, `self._iam`, ...) is a call of that operation. The product
builds clients only as `session.client("<service>")` and holds them in such names; the first test
keeps it so. The run-time counterpart records what the integration and end-to-end tests really call
(tests/iam_coverage.py).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import botocore.session
from botocore import xform_name

from cloudprovider.aws.iam_policy import API_ACTIONS, controller_policy
from tests.iam_coverage import policy_problems

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("cloudprovider", "activities", "workers")
SERVICES = ("ec2", "ssm", "iam", "pricing", "sts", "eks", "sqs")


@cache
def operations(service: str) -> dict[str, str]:
    """botocore method name -> "service:Operation" for `service`."""
    model = botocore.session.get_session().get_service_model(service)
    prefix = model.signing_name
    return {xform_name(op): f"{prefix}:{op}" for op in model.operation_names}


def receiver_service(node: ast.expr) -> str | None:
    """`ec2` for `ec2`, `self._ec2`, `provider.ec2_client`: the service a client's name says."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    stem = name.strip("_").removesuffix("_client")
    return stem if stem in SERVICES else None


def calls_in(source: str) -> set[str]:
    """The AWS operations `source` reads off service clients."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            service = receiver_service(node.value)
            if service is not None and node.attr in operations(service):
                found.add(operations(service)[node.attr])
    return found


def clients_built(source: str) -> set[str]:
    """The services of `x.client("<service>")` calls in `source`, "?" for a non-literal one."""
    built: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "client":
            arg = node.args[0] if node.args else None
            built.add(arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else "?")
    return built


def product_sources() -> dict[Path, str]:
    return {p: p.read_text() for pkg in PRODUCT for p in sorted((ROOT / pkg).rglob("*.py"))}


def product_calls() -> set[str]:
    return {c for source in product_sources().values() for c in calls_in(source)}


def test_the_scan_finds_calls_on_service_named_receivers_only() -> None:
    source = "self._ec2.create_fleet(**kw)\ncall('X', ec2.describe_images)\nself._iam.get_role\nother.create_fleet()\n"
    assert calls_in(source) == {"ec2:CreateFleet", "ec2:DescribeImages", "iam:GetRole"}
    assert clients_built("session.client('ec2')\nsession.client(name)\n") == {"ec2", "?"}


def test_the_product_builds_clients_only_for_scanned_services() -> None:
    built = {c for source in product_sources().values() for c in clients_built(source)}
    # factory.py builds them through `client(service)`, called with literals: ec2, ssm, iam.
    assert built <= {*SERVICES, "?"}
    factory = (ROOT / "cloudprovider" / "aws" / "factory.py").read_text()
    literals = {n.args[0].value for n in ast.walk(ast.parse(factory)) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name) and n.func.id == "client" and n.args
                and isinstance(n.args[0], ast.Constant)}  # fmt: skip
    assert literals <= set(SERVICES)


def test_api_actions_are_the_calls_the_product_makes() -> None:
    assert product_calls() == set(API_ACTIONS)


def test_the_policy_grants_every_call_and_nothing_no_call_needs() -> None:
    assert policy_problems(controller_policy("c"), product_calls()) == []


def test_a_new_call_without_a_grant_fails() -> None:
    problems = policy_problems(controller_policy("c"), product_calls() | {"ec2:CreateTags", "ec2:DeleteVolume"})
    assert problems == ["not granted: ec2:DeleteVolume"]  # CreateTags is granted (at launch only)
    assert policy_problems(controller_policy("c"), product_calls() - {"ec2:TerminateInstances"}) == [
        "granted but never needed: ec2:TerminateInstances"
    ]
