"""AMI families nodeflow cannot run make a node class not ready, with the field and the fix, before any
AWS call; every alias family the API accepts (Windows included) is supported."""

from __future__ import annotations

import pytest

from cloudprovider.aws.nodeclass.resolve import ami_family
from cloudprovider.errors import NodeClassNotReadyError
from tests.unit.cloudprovider.builders import node_class


@pytest.mark.parametrize(
    "alias", ["al2023@latest", "al2@v20240807", "bottlerocket@latest", "windows2019@latest", "windows2022@latest"]
)
def test_supported_aliases_give_their_family(alias: str) -> None:
    assert ami_family(node_class(amiSelectorTerms=[{"alias": alias}])) in (
        "AL2023",
        "AL2",
        "Bottlerocket",
        "Windows2019",
        "Windows2022",
    )


def test_an_unknown_alias_family_names_the_field_and_the_supported_aliases() -> None:
    term = node_class(amiSelectorTerms=[{"alias": "al2023@latest"}])
    term.spec.ami_selector_terms[0].alias = "ubuntu@latest"  # past the API's validation, as an old object could be
    with pytest.raises(NodeClassNotReadyError) as raised:
        ami_family(term)
    assert str(raised.value) == (
        'EC2NodeClass default: spec.amiSelectorTerms[0].alias: "ubuntu@latest" is not supported by nodeflow '
        "yet; use al2023, al2, bottlerocket, windows2019, windows2022 or windows2025"
    )


def test_an_unknown_ami_family_with_selected_amis_names_the_field() -> None:
    term = node_class(amiFamily="AL2023", amiSelectorTerms=[{"tags": {"team": "a"}}])
    term.spec.ami_family = "Ubuntu"
    with pytest.raises(NodeClassNotReadyError, match=r'spec\.amiFamily: "Ubuntu" is not supported.*or Custom'):
        ami_family(term)
