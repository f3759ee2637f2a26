"""A small evaluator of AWS identity policies, for the tests that check the controller policy's conditions.

Why it exists: moto (the local stack's AWS) checks a principal's policy by action and resource only (most
EC2 calls are authorized on "*" there, and its Condition evaluation refuses real requests), and no
maintained evaluator on the package index covers what the controller policy uses: the ones looked at either
call AWS's own simulator (an account is needed), evaluate service control policies with only a few global
keys, or expand a principal's effective permissions without evaluating a request. So
`tests/unit/cloudprovider/test_iam_policy_evaluation.py` evaluates each AWS request nodeflow makes, and
the attacks, with this module.

What it implements, from IAM's policy evaluation logic for identity policies
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html) and its
condition operators
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html):

- A request is one action on one resource with a context of condition keys (`Request`). A call that AWS
  authorizes on several resources or actions is several requests, each of which must be allowed.
- A statement applies when its Action (or NotAction) matches the action (case-insensitive, `*` and `?`
  wildcards), its Resource (or NotResource) matches the resource ARN (case-sensitive wildcards), and every
  condition holds: every operator block, every key in it (AND); any of a key's values (OR).
- An applying Deny statement denies ("ExplicitDeny"), whatever allows; otherwise an applying Allow
  allows ("Allow"); otherwise the request is denied implicitly ("ImplicitDeny").
- Operators: String(Not)Equals(IgnoreCase), String(Not)Like, Arn(Not)Equals, Arn(Not)Like, Bool, Null,
  each with `IfExists` (a missing key holds) and the set prefixes `ForAllValues:` (every value of the
  request's key matches some policy value; holds when the key is missing or empty) and `ForAnyValue:`
  (some value matches; fails when the key is missing). A missing key fails a plain operator and holds for
  a negated one (StringNotEquals, StringNotLike, ArnNotEquals, ArnNotLike), as AWS documents. Condition
  key names are case-insensitive; values are compared case-sensitively unless the operator says
  IgnoreCase. A multivalued key (a list in the context) with an operator without a set prefix is refused
  (ValueError): such a policy would be ambiguous, and none of nodeflow's should be.

Not implemented (the controller policy uses none of it): policy variables (`${aws:username}`), numeric,
date and IP operators, resource-based policies, permission boundaries, SCPs and session policies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

Decision = Literal["Allow", "ExplicitDeny", "ImplicitDeny"]
ContextValue = str | Sequence[str]


@dataclass(frozen=True)
class Request:
    """One authorization: `action` ("service:Action") on `resource` (an ARN, or "*" for actions without a
    resource type) with the condition keys in `context` (a list for a multivalued key such as aws:TagKeys)."""

    action: str
    resource: str
    context: Mapping[str, ContextValue] = field(default_factory=dict)


def tag_context(
    *,
    region: str | None = None,
    request_tags: Mapping[str, str] | None = None,
    resource_tags: Mapping[str, str] | None = None,
    **keys: ContextValue,
) -> dict[str, ContextValue]:
    """A request context: `aws:RequestedRegion`, the request's tags (`aws:RequestTag/<k>` and `aws:TagKeys`),
    the resource's existing tags (`aws:ResourceTag/<k>`) and further keys given as `name=value` with `:`
    spelled `__` (`iam__PassedToService="ec2.amazonaws.com"`)."""
    context: dict[str, ContextValue] = {}
    if region is not None:
        context["aws:RequestedRegion"] = region
    if request_tags is not None:
        context.update({f"aws:RequestTag/{k}": v for k, v in request_tags.items()})
        context["aws:TagKeys"] = list(request_tags)
    context.update({f"aws:ResourceTag/{k}": v for k, v in (resource_tags or {}).items()})
    context.update({k.replace("__", ":"): v for k, v in keys.items()})
    return context


@cache
def _pattern(glob: str, ignore_case: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(f"^{regex}$", re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def like(glob: str, value: str, ignore_case: bool = False) -> bool:
    """Whether `value` matches the IAM wildcard pattern `glob` (`*` any run of characters, `?` one)."""
    return _pattern(glob, ignore_case).match(value) is not None


def _listed(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _match_one(base: str, policy_value: str, value: str) -> bool:
    if base in ("StringEquals", "ArnEquals"):
        return policy_value == value
    if base == "StringEqualsIgnoreCase":
        return policy_value.lower() == value.lower()
    if base in ("StringLike", "ArnLike"):
        return like(policy_value, value)
    if base == "Bool":
        return policy_value.lower() == value.lower()
    raise ValueError(f"unsupported condition operator {base!r}")


NEGATED = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
}


def condition_holds(operator: str, key: str, policy_values: Any, context: Mapping[str, ContextValue]) -> bool:
    """Whether one condition (operator, key, the policy's values) holds in `context` (module docstring)."""
    lowered = {k.lower(): v for k, v in context.items()}
    present = key.lower() in lowered
    value = lowered.get(key.lower())
    values = _listed(policy_values)
    qualifier, _, base = operator.rpartition(":")
    if_exists = base.endswith("IfExists")
    base = base.removesuffix("IfExists")
    if base == "Null":
        absent = not present or value == []
        return all((v.lower() == "true") == absent for v in values)
    negated = base in NEGATED
    positive = NEGATED.get(base, base)
    if qualifier == "ForAllValues":
        items = [] if value is None else _listed(value)
        return all(any(_match_one(positive, p, item) for p in values) != negated for item in items)
    if qualifier == "ForAnyValue":
        items = [] if value is None else _listed(value)
        return any(any(_match_one(positive, p, item) for p in values) != negated for item in items)
    if qualifier:
        raise ValueError(f"unsupported set operator {qualifier!r}")
    if not present:
        return if_exists or negated
    if isinstance(value, list):
        raise ValueError(f"{operator} on the multivalued key {key}: use ForAllValues or ForAnyValue")
    return any(_match_one(positive, p, str(value)) for p in values) != negated


def _any_like(patterns: Any, value: str, ignore_case: bool) -> bool:
    return any(like(p, value, ignore_case) for p in _listed(patterns))


def statement_applies(statement: Mapping[str, Any], request: Request) -> bool:
    """Whether the statement's action, resource and conditions all match the request."""
    if "Action" in statement:
        if not _any_like(statement["Action"], request.action, ignore_case=True):
            return False
    elif _any_like(statement["NotAction"], request.action, ignore_case=True):
        return False
    if "Resource" in statement:
        if not _any_like(statement["Resource"], request.resource, ignore_case=False):
            return False
    elif _any_like(statement["NotResource"], request.resource, ignore_case=False):
        return False
    return all(
        condition_holds(operator, key, values, request.context)
        for operator, block in (statement.get("Condition") or {}).items()
        for key, values in block.items()
    )


def evaluate(policy: Mapping[str, Any], request: Request) -> Decision:
    """IAM's decision for the request under this identity policy: an explicit Deny wins, then an Allow."""
    statements = policy["Statement"]
    statements = [statements] if isinstance(statements, Mapping) else statements
    applying = [s for s in statements if statement_applies(s, request)]
    if any(s["Effect"] == "Deny" for s in applying):
        return "ExplicitDeny"
    return "Allow" if any(s["Effect"] == "Allow" for s in applying) else "ImplicitDeny"


def allowing_sids(policy: Mapping[str, Any], request: Request) -> list[str]:
    """The Sids of the Allow statements that apply to the request (for failure messages)."""
    return [s.get("Sid", "?") for s in policy["Statement"] if s["Effect"] == "Allow" and statement_applies(s, request)]


def all_allowed(policy: Mapping[str, Any], requests: Iterable[Request]) -> list[Request]:
    """The requests the policy does not allow (empty when it allows them all)."""
    return [r for r in requests if evaluate(policy, r) != "Allow"]
