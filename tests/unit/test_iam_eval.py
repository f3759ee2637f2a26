"""The test-side IAM evaluator (tests/iam_eval.py) against IAM's documented evaluation logic."""

from __future__ import annotations

from typing import Any

import pytest

from tests.iam_eval import Request, condition_holds, evaluate, like, tag_context


def policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **s} for s in statements]}


ANY = {"Action": "*", "Resource": "*"}


def test_allow_needs_an_applying_statement_and_an_explicit_deny_wins() -> None:
    allow = {"Action": "ec2:Describe*", "Resource": "*"}
    request = Request("ec2:DescribeInstances", "*")
    assert evaluate(policy(allow), request) == "Allow"
    assert evaluate(policy(allow), Request("ec2:TerminateInstances", "*")) == "ImplicitDeny"
    assert evaluate(policy(allow, {**ANY, "Effect": "Deny"}), request) == "ExplicitDeny"
    assert (
        evaluate(policy({"Action": "EC2:describeinstances", "Resource": "*"}), request) == "Allow"
    )  # actions: any case


def test_resources_match_with_wildcards_case_sensitively_and_not_resource_excludes() -> None:
    p = policy({"Action": "ec2:TerminateInstances", "Resource": "arn:aws:ec2:eu-west-1:*:instance/*"})
    assert evaluate(p, Request("ec2:TerminateInstances", "arn:aws:ec2:eu-west-1:111:instance/i-1")) == "Allow"
    assert evaluate(p, Request("ec2:TerminateInstances", "arn:aws:ec2:us-east-1:111:instance/i-1")) != "Allow"
    assert evaluate(p, Request("ec2:TerminateInstances", "arn:aws:ec2:eu-west-1:111:INSTANCE/i-1")) != "Allow"
    not_resource = policy({"Action": "*", "NotResource": "arn:aws:iam::*:role/admin"})
    assert evaluate(not_resource, Request("iam:PassRole", "arn:aws:iam::1:role/admin")) != "Allow"
    assert evaluate(not_resource, Request("iam:PassRole", "arn:aws:iam::1:role/nodes")) == "Allow"
    assert like("a?c*", "abcdef") and not like("a?c", "abbc")


@pytest.mark.parametrize(
    ("operator", "policy_values", "context", "holds"),
    [
        ("StringEquals", "owned", {"k": "owned"}, True),
        ("StringEquals", "owned", {"k": "Owned"}, False),
        ("StringEquals", ["a", "b"], {"k": "b"}, True),  # any of the values
        ("StringEquals", "owned", {}, False),  # a missing key fails a plain operator
        ("StringEqualsIgnoreCase", "owned", {"k": "OWNED"}, True),
        ("StringNotEquals", "owned", {"k": "shared"}, True),
        ("StringNotEquals", "owned", {}, True),  # ... and holds for a negated one
        ("StringLike", "*", {"k": ""}, True),
        ("StringLike", "*", {}, False),
        ("StringLike", "ec2.*", {"k": "ec2.amazonaws.com"}, True),
        ("StringNotLike", "prod-*", {"k": "prod-1"}, False),
        ("StringEqualsIfExists", "x", {}, True),
        ("StringEqualsIfExists", "x", {"k": "y"}, False),
        ("Null", "true", {}, True),
        ("Null", "true", {"k": "v"}, False),
        ("Null", "false", {"k": "v"}, True),
        ("Bool", "true", {"k": "True"}, True),
        ("ArnLike", "arn:aws:iam::*:role/n*", {"k": "arn:aws:iam::1:role/nodes"}, True),
        ("ForAllValues:StringEquals", ["Name", "x"], {"k": ["Name"]}, True),
        ("ForAllValues:StringEquals", ["Name", "x"], {"k": ["Name", "y"]}, False),
        ("ForAllValues:StringEquals", ["Name"], {}, True),  # a missing key: nothing fails
        ("ForAllValues:StringEquals", ["Name"], {"k": []}, True),
        ("ForAnyValue:StringEquals", ["Name"], {"k": ["y", "Name"]}, True),
        ("ForAnyValue:StringEquals", ["Name"], {}, False),
        ("ForAnyValue:StringNotEquals", ["Name"], {"k": ["Name", "y"]}, True),
        ("ForAllValues:StringNotEquals", ["Name"], {"k": ["Name", "y"]}, False),
    ],
)
def test_condition_operators(operator: str, policy_values: Any, context: dict[str, Any], holds: bool) -> None:
    assert condition_holds(operator, "k", policy_values, context) is holds


def test_condition_key_names_are_case_insensitive_and_multivalued_keys_need_a_set_operator() -> None:
    assert condition_holds("StringEquals", "aws:RequestedRegion", "eu-west-1", {"AWS:requestedregion": "eu-west-1"})
    with pytest.raises(ValueError, match="multivalued"):
        condition_holds("StringEquals", "aws:TagKeys", "Name", {"aws:TagKeys": ["Name"]})


def test_every_condition_block_and_key_must_hold() -> None:
    p = policy(
        {
            **ANY,
            "Condition": {
                "StringEquals": {"aws:RequestTag/team": "web", "aws:RequestedRegion": "eu-west-1"},
                "ForAllValues:StringEquals": {"aws:TagKeys": ["team"]},
            },
        }
    )
    ok = tag_context(region="eu-west-1", request_tags={"team": "web"})
    assert evaluate(p, Request("ec2:CreateTags", "*", ok)) == "Allow"
    assert evaluate(p, Request("ec2:CreateTags", "*", {**ok, "aws:RequestedRegion": "us-east-1"})) != "Allow"
    extra_key = tag_context(region="eu-west-1", request_tags={"team": "web", "owner": "x"})
    assert evaluate(p, Request("ec2:CreateTags", "*", extra_key)) != "Allow"


def test_tag_context_spells_the_keys_aws_evaluates() -> None:
    context = tag_context(
        region="r", request_tags={"a": "1"}, resource_tags={"b": "2"}, iam__PassedToService="ec2.amazonaws.com"
    )
    assert context == {
        "aws:RequestedRegion": "r",
        "aws:RequestTag/a": "1",
        "aws:TagKeys": ["a"],
        "aws:ResourceTag/b": "2",
        "iam:PassedToService": "ec2.amazonaws.com",
    }
