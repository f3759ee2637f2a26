"""Reading manifests: multi-document YAML, ${NAME} substitution, errors with file and line, dispatch by kind."""

from __future__ import annotations

import pytest
import yaml

from apis.ec2nodeclass import EC2NodeClass
from apis.errors import ApiValidationError
from apis.manifests import ManifestError, UnknownKindError, is_api_object, load_documents, parse_api_object
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from tests.unit.apis.builders import ec2nodeclass_doc, nodeclaim_doc, nodepool_doc, with_value


def test_documents_are_returned_in_order_and_empty_ones_skipped() -> None:
    text = "---\na: 1\n---\n# only a comment\n---\nb: 2\n...\n"
    assert load_documents(text) == [{"a": 1}, {"b": 2}]


def test_variables_are_substituted_before_parsing() -> None:
    text = "role: KarpenterNodeRole-${CLUSTER_NAME}\ntags: {discovery: '${CLUSTER_NAME}'}\n"
    docs = load_documents(text, {"CLUSTER_NAME": "prod"})
    assert docs == [{"role": "KarpenterNodeRole-prod", "tags": {"discovery": "prod"}}]


def test_without_variables_the_text_is_kept_as_written() -> None:
    assert load_documents("name: ${NAME}\n") == [{"name": "${NAME}"}]


def test_an_unset_variable_names_itself_and_its_line() -> None:
    with pytest.raises(ManifestError) as raised:
        load_documents("a: 1\nb: ${REGION}\n", {"CLUSTER_NAME": "x"}, source="pool.yaml")
    assert str(raised.value) == "pool.yaml:2: ${REGION} is not set; pass a value for REGION"
    assert raised.value.line == 2


def test_a_yaml_syntax_error_names_the_file_and_line() -> None:
    with pytest.raises(ManifestError) as raised:
        load_documents("---\nkind: NodePool\nspec:\n  a: 1\n    b: 2\n", source="bad.yaml")
    assert raised.value.source == "bad.yaml"
    assert raised.value.line == 5
    assert str(raised.value).startswith("bad.yaml:5: invalid YAML:")


def test_a_document_that_is_not_a_mapping_is_an_error() -> None:
    with pytest.raises(ManifestError, match=r"<string>:3: expected a Kubernetes object .* got a list"):
        load_documents("a: 1\n---\n- item\n")


@pytest.mark.parametrize(
    ("doc", "model"),
    [(nodepool_doc(), NodePool), (nodeclaim_doc(), NodeClaim), (ec2nodeclass_doc(), EC2NodeClass)],
    ids=["NodePool", "NodeClaim", "EC2NodeClass"],
)
def test_parse_api_object_returns_the_model_of_its_kind(doc: dict[str, object], model: type) -> None:
    assert is_api_object(doc)
    assert isinstance(parse_api_object(doc), model)


def test_an_unknown_kind_is_named_with_the_supported_ones() -> None:
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "inflate"}}
    assert not is_api_object(doc)
    with pytest.raises(UnknownKindError) as raised:
        parse_api_object(doc)
    (problem,) = raised.value.problems
    assert problem.field == "kind"
    assert 'unknown kind "Deployment"' in problem.message
    assert "karpenter.sh/v1 NodePool" in problem.message


def test_an_old_api_version_says_which_version_to_use() -> None:
    doc = with_value(nodepool_doc(), "apiVersion", "karpenter.sh/v1beta1")
    with pytest.raises(UnknownKindError) as raised:
        parse_api_object(doc)
    assert str(raised.value.problems[0]) == (
        'apiVersion: apiVersion "karpenter.sh/v1beta1" is not supported for NodePool; use karpenter.sh/v1'
    )


def test_invalid_object_error_names_kind_object_and_fields() -> None:
    doc = with_value(nodepool_doc(), "spec.weight", 500)
    with pytest.raises(ApiValidationError) as raised:
        parse_api_object(doc)
    assert str(raised.value) == 'NodePool "default" is invalid: spec.weight: must be at most 100, got 500'
    assert raised.value.problems[0].describe() == 'NodePool "default": spec.weight: must be at most 100, got 500'


def test_a_manifest_round_trips_through_yaml() -> None:
    text = yaml.safe_dump_all([nodepool_doc(), ec2nodeclass_doc()])
    objects = [parse_api_object(d) for d in load_documents(text)]
    assert [o.kind for o in objects] == ["NodePool", "EC2NodeClass"]
