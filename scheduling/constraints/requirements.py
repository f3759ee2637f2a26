"""The requirements algebra: node selector requirements as sets of allowed label values.

A `Req` is the set of values a label may take, where "absent" is one of the values: `In [a]` allows
only `a`, `NotIn [a]` allows absence and anything but `a`, `Exists` anything but absence,
`DoesNotExist` only absence, `Gt`/`Lt`/`Gte`/`Lte` integers in a range. Intersection is exact, so a
NodePool's requirements, a pod's and an instance type's labels combine by `&`; an empty result means
"incompatible". `Requirements` maps keys to `Req` and is immutable and hashable (it is a cache key).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from apis.labels import CAPACITY_TYPE, WELL_KNOWN_LABELS, ZONE, ZONE_ID
from apis.requirements import NodeSelectorRequirement

# Deprecated keys Kubernetes still accepts in pod specs, normalised to their stable names.
NORMALIZED_KEYS: dict[str, str] = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
    "topology.ebs.csi.aws.com/zone": ZONE,
}


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Req:
    """Allowed values of one label. `complement` means "every value except `values`"; `absent` means a
    node without the label qualifies; `gt`/`lt` are exclusive integer bounds (values must parse as int)."""

    values: frozenset[str] = frozenset()
    complement: bool = True
    absent: bool = True
    gt: int | None = None
    lt: int | None = None
    min_values: int | None = None

    @staticmethod
    def from_operator(operator: str, values: Iterable[str], min_values: int | None = None) -> Req:
        vals = frozenset(values)
        if operator == "In":
            return Req(vals, complement=False, absent=False, min_values=min_values)
        if operator == "NotIn":
            return Req(vals, complement=True, absent=True, min_values=min_values)
        if operator == "Exists":
            return Req(complement=True, absent=False, min_values=min_values)
        if operator == "DoesNotExist":
            return Req(complement=False, absent=True)
        if operator not in ("Gt", "Gte", "Lt", "Lte"):
            raise ValueError(f'unknown operator "{operator}": use In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte')
        bound = _single_int(operator, vals)
        if operator == "Gt":
            return Req(absent=False, gt=bound, min_values=min_values)
        if operator == "Gte":
            return Req(absent=False, gt=bound - 1, min_values=min_values)
        if operator == "Lt":
            return Req(absent=False, lt=bound, min_values=min_values)
        return Req(absent=False, lt=bound + 1, min_values=min_values)

    def __and__(self, other: Req) -> Req:
        if self.complement and other.complement:
            values, complement = self.values | other.values, True
        elif self.complement:
            values, complement = other.values - self.values, False
        elif other.complement:
            values, complement = self.values - other.values, False
        else:
            values, complement = self.values & other.values, False
        gt = _max_opt(self.gt, other.gt)
        lt = _min_opt(self.lt, other.lt)
        if not complement and (gt is not None or lt is not None):
            values = frozenset(v for v in values if _in_bounds(v, gt, lt))
        min_values = _max_opt(self.min_values, other.min_values)
        return Req(values, complement, self.absent and other.absent, gt, lt, min_values)

    def is_empty(self) -> bool:
        """No node can satisfy it: neither absence nor any value is allowed."""
        if self.absent:
            return False
        if not self.complement:
            return not self.values
        if self.gt is not None and self.lt is not None:
            return self.lt - self.gt <= 1
        return False

    def allows(self, value: str | None) -> bool:
        """Whether a label with this value (None: the label is absent) satisfies the requirement."""
        if value is None:
            return self.absent
        if (value in self.values) == self.complement:
            return False
        return _in_bounds(value, self.gt, self.lt) if (self.gt is not None or self.lt is not None) else True

    def single(self) -> str | None:
        """The one value this requirement pins, if it pins exactly one."""
        if not self.complement and not self.absent and len(self.values) == 1:
            return next(iter(self.values))
        return None

    def finite(self) -> list[str] | None:
        """The allowed values in sorted order when they are a finite set (In), else None."""
        return None if self.complement else sorted(self.values)

    def to_api(self, key: str) -> list[NodeSelectorRequirement]:
        """The requirement in Kubernetes form (one or two entries; deterministic order)."""
        mv = self.min_values
        if not self.complement:
            if self.absent and not self.values:
                return [NodeSelectorRequirement(key=key, operator="DoesNotExist")]
            return [NodeSelectorRequirement(key=key, operator="In", values=sorted(self.values), min_values=mv)]
        out: list[NodeSelectorRequirement] = []
        if self.values or (self.absent and self.gt is None and self.lt is None):
            out.append(NodeSelectorRequirement(key=key, operator="NotIn", values=sorted(self.values), min_values=mv))
        elif not self.absent and self.gt is None and self.lt is None:
            out.append(NodeSelectorRequirement(key=key, operator="Exists", min_values=mv))
        if self.gt is not None:
            out.append(NodeSelectorRequirement(key=key, operator="Gt", values=[str(self.gt)]))
        if self.lt is not None:
            out.append(NodeSelectorRequirement(key=key, operator="Lt", values=[str(self.lt)]))
        return out

    def describe(self) -> str:
        """Human form, e.g. `In [a, b]`, `NotIn [a]`, `Exists`, `Gt 4`."""
        if not self.complement:
            if self.absent and not self.values:
                return "DoesNotExist"
            return f"In [{', '.join(sorted(self.values))}]"
        parts = []
        if self.values:
            parts.append(f"NotIn [{', '.join(sorted(self.values))}]")
        elif not self.absent and self.gt is None and self.lt is None:
            parts.append("Exists")
        if self.gt is not None:
            parts.append(f"Gt {self.gt}")
        if self.lt is not None:
            parts.append(f"Lt {self.lt}")
        return " and ".join(parts) or "anything"


ANY = Req()


def _single_int(operator: str, values: frozenset[str]) -> int:
    parsed = [_int(v) for v in values]
    if len(parsed) != 1 or parsed[0] is None:
        raise ValueError(f"operator {operator} needs exactly one integer value, got {sorted(values)}")
    return parsed[0]


def _in_bounds(value: str, gt: int | None, lt: int | None) -> bool:
    number = _int(value)
    if number is None:
        return False
    return (gt is None or number > gt) and (lt is None or number < lt)


def _max_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


class Requirements(Mapping[str, Req]):
    """An immutable, hashable map from label key to `Req`. A key not present is unconstrained."""

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, Req] | None = None) -> None:
        self._items: dict[str, Req] = dict(sorted((items or {}).items()))
        self._hash = hash(tuple(self._items.items()))

    def __getitem__(self, key: str) -> Req:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._hash == other._hash and self._items == other._items

    def __repr__(self) -> str:
        return f"Requirements({', '.join(f'{k} {v.describe()}' for k, v in self._items.items())})"

    def get_req(self, key: str) -> Req:
        return self._items.get(key, ANY)

    def intersect(self, other: Requirements) -> Requirements:
        if not other:
            return self
        if not self:
            return other
        merged = dict(self._items)
        for key, req in other._items.items():
            mine = merged.get(key)
            merged[key] = req if mine is None else mine & req
        return Requirements(merged)

    def conflicts(self) -> list[str]:
        """Keys whose allowed values are empty (sorted)."""
        return [key for key, req in self._items.items() if req.is_empty()]

    def matches_labels(self, labels: Mapping[str, str]) -> bool:
        return all(req.allows(labels.get(key)) for key, req in self._items.items())

    def first_mismatch(self, labels: Mapping[str, str]) -> str | None:
        for key, req in self._items.items():
            if not req.allows(labels.get(key)):
                return key
        return None

    def to_api(self) -> list[NodeSelectorRequirement]:
        return [entry for key, req in self._items.items() for entry in req.to_api(key)]

    def with_req(self, key: str, req: Req) -> Requirements:
        merged = dict(self._items)
        merged[key] = merged[key] & req if key in merged else req
        return Requirements(merged)


EMPTY = Requirements()


def parse_expressions(expressions: Iterable[Mapping[str, Any]], where: str) -> Requirements:
    """`matchExpressions` (dicts or API models as dicts) into Requirements; deprecated keys normalised.
    Raises ValueError naming `where` and the bad entry."""
    out: dict[str, Req] = {}
    for index, expr in enumerate(expressions):
        key = NORMALIZED_KEYS.get(str(expr.get("key", "")), str(expr.get("key", "")))
        if not key:
            raise ValueError(f"{where}[{index}].key: a requirement needs a label key")
        try:
            req = Req.from_operator(
                str(expr.get("operator", "")),
                [str(v) for v in expr.get("values") or []],
                expr.get("minValues"),
            )
        except ValueError as err:
            raise ValueError(f"{where}[{index}] ({key}): {err}") from None
        out[key] = out[key] & req if key in out else req
    return Requirements(out)


def from_api(requirements: Iterable[NodeSelectorRequirement], where: str = "requirements") -> Requirements:
    return parse_expressions((r.model_dump(by_alias=True) for r in requirements), where)


def from_labels(labels: Mapping[str, str]) -> Requirements:
    """Exact label values as `In` requirements (a nodeSelector, or a NodePool's template labels)."""
    return Requirements({NORMALIZED_KEYS.get(k, k): Req.from_operator("In", [v]) for k, v in labels.items()})


def is_offering_key(key: str) -> bool:
    """Keys whose values come from an instance type's offerings rather than its labels."""
    return key in (ZONE, CAPACITY_TYPE, ZONE_ID)


def undefined_key_default(key: str) -> Req:
    """What a NodePool implies for a key it does not mention: well-known keys are open (instance types
    decide), any other label will be absent on the node."""
    return ANY if key in WELL_KNOWN_LABELS else Req.from_operator("DoesNotExist", [])
