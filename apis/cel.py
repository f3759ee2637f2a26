"""CEL validation rules (`x-kubernetes-validations`) as data, for the CRDs generated in `apis.crds`.

Each kind's module holds a `CEL_RULES` table: schema path -> the rules the API server evaluates on the
value at that path, as Karpenter's v1 CRDs attach them (see "Validation rules" in the Kubernetes docs,
https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation-rules,
and Karpenter's NodePool / EC2NodeClass docs, https://karpenter.sh/docs/concepts/). The rules repeat, in
the API server, what the pydantic models check in the controller: `kubectl apply` then refuses an object
the controller would reject, and the models stay the backstop.

A path is a dotted list of property names below the object's root; `[]` steps into an array's items and
`{}` into a map's values, e.g. "spec.template.spec.requirements[].key". A rule that reads `oldSelf` is a
transition rule: the API server evaluates it on updates only.
"""

from __future__ import annotations

from dataclasses import dataclass

RulePath = str


@dataclass(frozen=True)
class CelRule:
    """One `x-kubernetes-validations` entry: a CEL expression that must hold, and the message shown when
    it does not."""

    rule: str
    message: str

    def to_schema(self) -> dict[str, str]:
        """The entry as a CRD carries it."""
        return {"message": self.message, "rule": self.rule}


RuleTable = dict[RulePath, tuple[CelRule, ...]]


def cel_list(values: tuple[str, ...] | list[str], quote: str = '"') -> str:
    """A CEL list literal of strings, e.g. `["a", "b"]`."""
    return "[" + ", ".join(f"{quote}{v}{quote}" for v in values) + "]"


def not_empty(what: str) -> CelRule:
    """`self != ''` with Karpenter's "<what> may not be empty" message."""
    return CelRule("self != ''", f"{what} may not be empty")


def path_steps(path: RulePath) -> list[str]:
    """The steps of a rule path: property names, "[]" (array items) and "{}" (map values)."""
    steps: list[str] = []
    for part in path.split("."):
        name = part.rstrip("[]{}")
        if name:
            steps.append(name)
        suffix = part[len(name) :]
        steps += [suffix[i : i + 2] for i in range(0, len(suffix), 2)]
    return steps
