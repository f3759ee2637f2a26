"""Node selector requirements and taints, as Karpenter v1 writes them.

The models check what holds for every requirement and taint (pod, NodePool or NodeClaim): syntax and the
operator. `requirement_problem` adds Karpenter's value-count rules; NodePool and NodeClaim apply it and
their restricted-key rules to the requirements they store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BeforeValidator, Field

from apis.base import KubeModel
from apis.cel import CelRule, cel_list
from apis.labels import (
    AWS_WELL_KNOWN_LABELS,
    CAPACITY_TYPE,
    CAPACITY_TYPES,
    HOSTNAME,
    NODEPOOL,
    label_domain,
    normalize_label,
)
from apis.values.syntax import (
    LABEL_VALUE_PATTERN,
    QUALIFIED_NAME_PATTERN,
    SchemaExtra,
    field_error,
    label_value_problem,
    qualified_name_problem,
)

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
OPERATORS: tuple[str, ...] = get_args(Operator)
NUMERIC_OPERATORS: tuple[str, ...] = ("Gt", "Lt", "Gte", "Lte")
TAINT_EFFECTS: tuple[str, ...] = get_args(TaintEffect)
MAX_KEY_LENGTH = 316
# Keys whose values Karpenter knows: an In requirement must allow at least one of them.
WELL_KNOWN_VALUES: dict[str, tuple[str, ...]] = {CAPACITY_TYPE: CAPACITY_TYPES}


def _one_of(kind: str, allowed: tuple[str, ...]) -> BeforeValidator:
    """A before-validator that names the allowed values (pydantic's Literal message lists them quoted)."""

    def check(value: object) -> object:
        if isinstance(value, str) and value not in allowed:
            raise ValueError(f'unknown {kind} "{value}"; use one of {", ".join(allowed)}')
        return value

    return BeforeValidator(check)


def validate_label_key(value: str) -> str:
    """The key when it is a valid label key (qualified name, at most 316 characters); else ValueError."""
    problem = qualified_name_problem(value)
    if problem is None and len(value) > MAX_KEY_LENGTH:
        problem = f'invalid label key "{value}": at most {MAX_KEY_LENGTH} characters'
    if problem:
        raise ValueError(problem)
    return value


def validate_taint_key(value: str) -> str:
    """The key when it is a valid taint key (qualified name); else ValueError."""
    problem = qualified_name_problem(value, "taint key")
    if problem:
        raise ValueError(problem)
    return value


def validate_label_value(value: str) -> str:
    """The value when it is a valid label value; else ValueError."""
    problem = label_value_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def validate_taint_value(value: str) -> str:
    """The value when it is a valid taint value (label-value syntax); else ValueError."""
    problem = label_value_problem(value, "taint value")
    if problem:
        raise ValueError(problem)
    return value


LabelKey = Annotated[
    str,
    AfterValidator(validate_label_key),
    SchemaExtra({"pattern": QUALIFIED_NAME_PATTERN, "maxLength": MAX_KEY_LENGTH}),
]
LabelValue = Annotated[
    str, AfterValidator(validate_label_value), SchemaExtra({"pattern": LABEL_VALUE_PATTERN, "maxLength": 63})
]
TaintKey = Annotated[
    str, AfterValidator(validate_taint_key), SchemaExtra({"pattern": QUALIFIED_NAME_PATTERN, "minLength": 1})
]
TaintValue = Annotated[str, AfterValidator(validate_taint_value), SchemaExtra({"pattern": LABEL_VALUE_PATTERN})]


class NodeSelectorRequirement(KubeModel):
    """`{key, operator, values, minValues}`. minValues asks for at least that many distinct values
    (e.g. instance types) to stay possible after scheduling, for flexibility at launch.

    The model checks syntax only (key, values, operator), so the scheduler may use it for any requirement;
    `requirement_problem` holds Karpenter's rules for requirements stored in NodePools and NodeClaims.
    """

    key: LabelKey
    operator: Annotated[Operator, _one_of("operator", OPERATORS)]
    values: list[LabelValue] = Field(default_factory=list)
    min_values: int | None = Field(default=None, ge=1, le=50)


def checked_requirement(
    requirement: NodeSelectorRequirement, label_reason: Callable[[str], str | None]
) -> NodeSelectorRequirement:
    """The requirement as written, once it passes Karpenter's runtime checks on its key (`label_reason`:
    why the key may not be used, None when it may) and `requirement_problem`; a deprecated key
    (`beta.kubernetes.io/arch`) is checked as its stable one, as Karpenter checks it (the scheduler reads
    both keys alike). Raises the field error of the first check it fails."""
    checked = requirement.model_copy(update={"key": normalize_label(requirement.key)})
    reason = label_reason(checked.key)
    if reason:
        raise field_error("key", reason)
    problem = requirement_problem(checked)
    if problem:
        raise field_error(*problem)
    return requirement


def requirement_problem(requirement: NodeSelectorRequirement) -> tuple[str, str] | None:
    """The first of Karpenter's CRD rules the requirement breaks, as (field wire name, message), or None.

    In needs at least one value; Gt, Lt, Gte and Lte need exactly one value, a non-negative integer; an In on
    karpenter.sh/capacity-type must allow spot, on-demand or reserved; with In, minValues may not exceed the
    number of values.
    """
    operator, values, min_values = requirement.operator, requirement.values, requirement.min_values
    if operator == "In" and not values:
        return "values", 'operator In needs at least one value; list the accepted values, or use "Exists"'
    if operator in NUMERIC_OPERATORS and (len(values) != 1 or not values[0].isdigit()):
        return (
            "values",
            f'operator {operator} needs exactly one value, a non-negative integer such as "2"; got {values!r}',
        )
    known = WELL_KNOWN_VALUES.get(requirement.key)
    if operator == "In" and known and values and not set(values) & set(known):
        return "values", f"none of {values!r} is a known value of {requirement.key}; use one of {', '.join(known)}"
    if operator == "In" and min_values is not None and len(values) < min_values:
        return "minValues", (
            f"minValues {min_values} is more than the {len(values)} values given; list at least {min_values} "
            "values or lower minValues"
        )
    return None


class Taint(KubeModel):
    """A node taint `{key, value, effect}`; pods must tolerate it to run on the node."""

    key: TaintKey
    value: TaintValue | None = None
    effect: Annotated[TaintEffect, _one_of("taint effect", TAINT_EFFECTS)]
    time_added: str | None = None

    def matches(self, other: Taint) -> bool:
        """Same key and effect (the identity of a taint on a node)."""
        return self.key == other.key and self.effect == other.effect


# CEL rules of the CRDs (apis.cel) on requirement lists and keys, as Karpenter's NodePool and NodeClaim CRDs
# carry them; `requirement_problem` and the restricted-label checks are the models' versions of them.
_NUMERIC = " || ".join(f"x.operator == '{op}'" for op in NUMERIC_OPERATORS)
REQUIREMENT_LIST_RULES: tuple[CelRule, ...] = (
    CelRule(
        "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
        "requirements with operator 'In' must have a value defined",
    ),
    CelRule(
        f"self.all(x, ({_NUMERIC}) ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
    ),
    CelRule(
        "self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",
        "requirements with 'minValues' must have at least that many values specified in the 'values' field",
    ),
)
# The well-known keys of the two restricted Karpenter domains: only these may be used there.
KARPENTER_DOMAIN_LABELS: tuple[str, ...] = (CAPACITY_TYPE, NODEPOOL)
AWS_DOMAIN_LABELS: tuple[str, ...] = tuple(k for k in AWS_WELL_KNOWN_LABELS if label_domain(k) == "karpenter.k8s.aws")


def label_key_rules(var: str, allow_nodepool: bool) -> tuple[CelRule, ...]:
    """The CRD rules on one label key named `var` (`self` for a requirement key, the loop variable inside
    `self.all(x, ...)` for a map of labels): the restricted karpenter.sh and karpenter.k8s.aws domains allow
    only their well-known keys, kubernetes.io/hostname is Karpenter's, and so is karpenter.sh/nodepool
    unless `allow_nodepool` (NodeClaims carry it; NodePools may not set it)."""

    def domain(name: str, allowed: tuple[str, ...]) -> CelRule:
        rule = f'{var} in {cel_list(allowed)} || !{var}.find("^([^/]+)").endsWith("{name}")'
        return CelRule(rule, f'label domain "{name}" is restricted')

    rules = [domain("karpenter.sh", KARPENTER_DOMAIN_LABELS)]
    if not allow_nodepool:
        rules.append(CelRule(f'{var} != "{NODEPOOL}"', f'label "{NODEPOOL}" is restricted'))
    rules.append(CelRule(f'{var} != "{HOSTNAME}"', f'label "{HOSTNAME}" is restricted'))
    rules.append(domain("karpenter.k8s.aws", AWS_DOMAIN_LABELS))
    return tuple(rules)


def label_map_rules(allow_nodepool: bool) -> tuple[CelRule, ...]:
    """`label_key_rules` for every key of a map of labels (`self.all(x, ...)`)."""
    return tuple(CelRule(f"self.all(x, {r.rule})", r.message) for r in label_key_rules("x", allow_nodepool))
