"""The generated CRDs are fresh, structural, named like Karpenter's, and cover Karpenter's fields."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from apis import crds
from tests.unit.apis.builders import REPO_ROOT, ec2nodeclass_doc, nodepool_doc, reference_dir, with_value

CRD_DIR = REPO_ROOT / "deploy" / "crds"
FILES = ["karpenter.k8s.aws_ec2nodeclasses.yaml", "karpenter.sh_nodeclaims.yaml", "karpenter.sh_nodepools.yaml"]


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_committed_crds_are_fresh() -> None:
    rendered = crds.render_crds()
    current = {name: (CRD_DIR / name).read_text() if (CRD_DIR / name).exists() else None for name in rendered}
    stale = crds.stale_files(rendered, current)
    assert not stale, f"deploy/crds is stale ({', '.join(stale)}): run `make crds` and commit the result"


def test_rendering_is_deterministic() -> None:
    assert crds.render_crds() == crds.render_crds()
    assert sorted(crds.render_crds()) == FILES


@pytest.mark.parametrize("definition", crds.DEFINITIONS, ids=lambda d: d.kind)
def test_crd_names_and_subresources(definition: crds.CrdDefinition) -> None:
    crd = crds.build_crd(definition)
    assert crd["metadata"]["name"] == f"{definition.plural}.{definition.group}"
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["names"]["categories"] == ["karpenter"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"]["status"] == {}
    assert {"Ready", "Age"} <= {c["name"] for c in version["additionalPrinterColumns"]}
    assert schema_of(crd)["properties"]["metadata"] == {"type": "object"}


def test_nodepool_has_the_scale_subresource_and_ec2nodeclass_its_short_names() -> None:
    by_kind = {d.kind: crds.build_crd(d) for d in crds.DEFINITIONS}
    assert by_kind["NodePool"]["spec"]["versions"][0]["subresources"]["scale"]["statusReplicasPath"] == ".status.nodes"
    assert by_kind["EC2NodeClass"]["spec"]["names"]["shortNames"] == ["ec2nc", "ec2ncs"]


def unstructural_nodes(node: Any, path: str = "") -> list[str]:
    """Paths of schema nodes the API server would refuse: no type (unless int-or-string or free-form), a $ref,
    or additionalProperties beside properties."""
    if not isinstance(node, dict):
        return []
    problems = []
    if "$ref" in node or "$defs" in node:
        problems.append(f"{path}: unresolved reference")
    if "type" not in node and not (
        node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
    ):
        problems.append(f"{path}: no type")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: properties and additionalProperties together")
    for name, sub in (node.get("properties") or {}).items():
        problems += unstructural_nodes(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        problems += unstructural_nodes(node.get(key), f"{path}[{key}]")
    return problems


@pytest.mark.parametrize("definition", crds.DEFINITIONS, ids=lambda d: d.kind)
def test_schema_is_structural(definition: crds.CrdDefinition) -> None:
    assert unstructural_nodes(schema_of(crds.build_crd(definition))) == []


def test_schema_keeps_karpenter_defaults_and_patterns() -> None:
    spec = crds.openapi_schema(crds.DEFINITIONS[0].model)["properties"]["spec"]["properties"]
    disruption = spec["disruption"]
    assert disruption["default"] == {"consolidateAfter": "0s"}
    assert disruption["properties"]["budgets"]["default"] == [{"nodes": "10%"}]
    assert spec["template"]["properties"]["spec"]["properties"]["expireAfter"]["default"] == "720h"
    assert spec["weight"]["minimum"] == 1 and spec["weight"]["maximum"] == 100
    assert spec["limits"]["additionalProperties"]["x-kubernetes-int-or-string"] is True


@pytest.mark.parametrize(
    ("doc", "ok"),
    [
        (nodepool_doc(), True),
        (with_value(nodepool_doc(), "spec.weight", 101), False),
        (with_value(nodepool_doc(), "spec.disruption.consolidateAfter", "30d"), False),
        (ec2nodeclass_doc(), True),
        (with_value(ec2nodeclass_doc(), "spec.metadataOptions", {"httpTokens": "maybe"}), False),
    ],
    ids=["nodepool", "weight-101", "duration-in-days", "ec2nodeclass", "bad-http-tokens"],
)
def test_schema_accepts_valid_and_rejects_invalid_objects(doc: dict[str, Any], ok: bool) -> None:
    model = next(d.model for d in crds.DEFINITIONS if d.kind == doc["kind"])
    assert jsonschema.Draft7Validator(crds.openapi_schema(model)).is_valid(doc) is ok


def property_paths(schema: Any, path: str = "") -> set[str]:
    """Every property's path; a free-form object (preserve-unknown-fields) contributes "<path>.*"."""
    if not isinstance(schema, dict):
        return set()
    out = {f"{path}.*"} if schema.get("x-kubernetes-preserve-unknown-fields") else set()
    for name, sub in (schema.get("properties") or {}).items():
        out |= {f"{path}.{name}"} | property_paths(sub, f"{path}.{name}")
    out |= property_paths(schema.get("items"), f"{path}[]")
    return out


@pytest.mark.parametrize("definition", crds.DEFINITIONS, ids=lambda d: d.kind)
def test_schema_has_every_field_of_karpenters_crd(definition: crds.CrdDefinition) -> None:
    reference = yaml.safe_load((reference_dir() / "karpenter-crds" / definition.file_name).read_text())
    ours = property_paths(schema_of(crds.build_crd(definition)))
    free_form = [p.removesuffix("*") for p in ours if p.endswith(".*")]
    missing = [p for p in sorted(property_paths(schema_of(reference)) - ours) if not p.startswith(tuple(free_form))]
    assert missing == []
