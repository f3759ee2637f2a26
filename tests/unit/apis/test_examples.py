"""Every upstream example NodePool and EC2NodeClass parses, validates and round-trips by alias, and
validates against the generated CRD schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from apis.crds import DEFINITIONS, openapi_schema
from apis.errors import ApiValidationError
from apis.manifests import parse_api_object
from tests.unit.apis.builders import CLUSTER_NAME, example_files, keys_of
from workers.cli.manifest_files import load_files

KINDS = ("NodePool", "EC2NodeClass")
# Upstream examples that Karpenter's own CRD rejects: (file, kind) -> (field, why).
KNOWN_INVALID = {
    ("windows-custom-userdata.yaml", "NodePool"): (
        "spec.template.spec.nodeClassRef.group",
        'its group "karpenter.k8s.aws/v1" breaks the CRD pattern ^[^/]*$',
    ),
}
SCHEMAS = {d.kind: openapi_schema(d.model) for d in DEFINITIONS}


def example_documents() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, doc)
        for path in example_files()
        for doc in load_files([path], {"CLUSTER_NAME": CLUSTER_NAME})
        if doc.get("kind") in KINDS
    ]


def example_ids() -> list[Any]:
    try:
        documents = example_documents()
    except pytest.skip.Exception as skipped:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=str(skipped)), id="reference-data-missing")]
    return [pytest.param(name, doc, id=f"{name}:{doc['kind']}") for name, doc in documents]


@pytest.mark.parametrize(("file_name", "doc"), example_ids())
def test_example_parses_and_round_trips_by_alias(file_name: str, doc: dict[str, Any]) -> None:
    known = KNOWN_INVALID.get((file_name, doc["kind"]))
    if known:
        with pytest.raises(ApiValidationError) as raised:
            parse_api_object(doc)
        assert [p.field for p in raised.value.problems] == [known[0]], known[1]
        return
    obj = parse_api_object(doc)
    dumped = obj.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert keys_of(dumped) == keys_of(doc)


@pytest.mark.parametrize(("file_name", "doc"), example_ids())
def test_example_validates_against_the_generated_crd_schema(file_name: str, doc: dict[str, Any]) -> None:
    validator = jsonschema.Draft7Validator(SCHEMAS[doc["kind"]])
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
    expected = ["spec.template.spec.nodeClassRef.group"] if (file_name, doc["kind"]) in KNOWN_INVALID else []
    assert [e.split(":")[0] for e in errors] == expected, errors


def test_the_examples_cover_both_kinds() -> None:
    kinds = {doc["kind"] for _, doc in example_documents()}
    assert kinds == set(KINDS)


def test_examples_need_the_cluster_name_variable() -> None:
    paths: list[Path] = [p for p in example_files() if "${CLUSTER_NAME}" in p.read_text()]
    assert paths, "expected the upstream examples to use ${CLUSTER_NAME}"
