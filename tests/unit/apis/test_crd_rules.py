"""The CEL rules (x-kubernetes-validations) of the generated CRDs: where they are attached, and that they
cover every rule of Karpenter's v1 CRDs (by message, at the same schema path)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from apis import crds
from apis.cel import CelRule, path_steps
from tests.unit.apis.builders import reference_dir

BY_KIND = {d.kind: d for d in crds.DEFINITIONS}


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def rules_by_path(schema: Any, path: str = "") -> dict[str, list[dict[str, str]]]:
    """Rule path (as in apis.cel, without the leading dot) -> the x-kubernetes-validations there."""
    if not isinstance(schema, dict):
        return {}
    out = {path.lstrip("."): schema["x-kubernetes-validations"]} if "x-kubernetes-validations" in schema else {}
    for name, sub in (schema.get("properties") or {}).items():
        out |= rules_by_path(sub, f"{path}.{name}")
    out |= rules_by_path(schema.get("items"), f"{path}[]")
    out |= rules_by_path(schema.get("additionalProperties"), f"{path}{{}}")
    return out


def generated_rules(kind: str) -> dict[str, list[dict[str, str]]]:
    return rules_by_path(schema_of(crds.build_crd(BY_KIND[kind])))


def messages(kind: str, path: str) -> list[str]:
    return [r["message"] for r in generated_rules(kind)[path]]


def test_path_steps() -> None:
    assert path_steps("spec.template.spec.requirements[].key") == [
        "spec",
        "template",
        "spec",
        "requirements",
        "[]",
        "key",
    ]
    assert path_steps("spec.tags{}") == ["spec", "tags", "{}"]


def test_a_rule_at_a_path_the_schema_lacks_is_an_error() -> None:
    with pytest.raises(crds.SchemaError, match=r"spec\.nope"):
        crds.attach_rules({"type": "object", "properties": {"spec": {"type": "object"}}}, {"spec.nope": ()})


def test_attach_rules_does_not_mutate_its_argument() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"spec": {"type": "object"}}}
    out = crds.attach_rules(schema, {"spec": (CelRule("self == oldSelf", "immutable"),)})
    assert "x-kubernetes-validations" not in schema["properties"]["spec"]
    assert out["properties"]["spec"]["x-kubernetes-validations"] == [
        {"message": "immutable", "rule": "self == oldSelf"}
    ]


def test_nodepool_rules_where_karpenter_attaches_them() -> None:
    assert messages("NodePool", "spec.disruption.budgets") == ["'schedule' must be set with 'duration'"]
    assert 'label "kubernetes.io/hostname" is restricted' in messages(
        "NodePool", "spec.template.spec.requirements[].key"
    )
    assert 'label "karpenter.sh/nodepool" is restricted' in messages("NodePool", "spec.template.metadata.labels")
    assert "requirements with operator 'In' must have a value defined" in messages(
        "NodePool", "spec.template.spec.requirements"
    )
    assert "only 'limits.nodes' is supported on static NodePools" in messages("NodePool", "spec")
    transition = [r["rule"] for r in generated_rules("NodePool")["spec.template.spec.nodeClassRef"]]
    assert transition == ["self.group == oldSelf.group", "self.kind == oldSelf.kind"]


def test_nodeclaim_spec_is_immutable_and_may_carry_the_nodepool_label() -> None:
    assert generated_rules("NodeClaim")["spec"] == [{"message": "spec is immutable", "rule": "self == oldSelf"}]
    keys = messages("NodeClaim", "spec.requirements[].key")
    assert 'label "kubernetes.io/hostname" is restricted' in keys
    assert 'label "karpenter.sh/nodepool" is restricted' not in keys


def test_ec2nodeclass_rules_where_karpenter_attaches_them() -> None:
    assert "must specify exactly one of ['role', 'instanceProfile']" in messages("EC2NodeClass", "spec")
    assert messages("EC2NodeClass", "spec.amiSelectorTerms[].alias")[0] == (
        "'alias' is improperly formatted, must match the format 'family@version'"
    )
    assert "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms" in messages(
        "EC2NodeClass", "spec.amiSelectorTerms"
    )
    assert messages("EC2NodeClass", "spec.subnetSelectorTerms[].tags") == ["empty tag keys or values aren't supported"]
    assert "tag contains a restricted tag matching kubernetes.io/cluster/" in messages("EC2NodeClass", "spec.tags")


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_every_rule_of_karpenters_crd_is_carried(kind: str) -> None:
    """Same messages at the same paths as Karpenter's CRD (rules may be adapted, messages are kept)."""
    reference = yaml.safe_load((reference_dir() / "karpenter-crds" / BY_KIND[kind].file_name).read_text())
    theirs = rules_by_path(schema_of(reference))
    ours = generated_rules(kind)
    missing = [
        (path, rule["message"])
        for path, listed in sorted(theirs.items())
        for rule in listed
        if rule["message"] not in [r["message"] for r in ours.get(path, [])]
    ]
    assert missing == []
    assert sorted(ours) == sorted(theirs)
