"""AMI families nodeflow cannot run (the Windows ones, which the API accepts) make a node class not ready,
with the field and the fix, before any AWS call."""

from __future__ import annotations

import pytest

from cloudprovider.aws.nodeclass import ami_family
from cloudprovider.errors import NodeClassNotReadyError
from tests.unit.cloudprovider.builders import node_class


@pytest.mark.parametrize("alias", ["al2023@latest", "al2@v20240807", "bottlerocket@latest"])
def test_supported_aliases_give_their_family(alias: str) -> None:
    assert ami_family(node_class(amiSelectorTerms=[{"alias": alias}])) in ("AL2023", "AL2", "Bottlerocket")


@pytest.mark.parametrize("family", ["windows2019", "windows2022", "windows2025"])
def test_a_windows_alias_names_the_field_and_the_supported_aliases(family: str) -> None:
    with pytest.raises(NodeClassNotReadyError) as raised:
        ami_family(node_class(amiSelectorTerms=[{"alias": f"{family}@latest"}]))
    assert str(raised.value) == (
        f'EC2NodeClass default: spec.amiSelectorTerms[0].alias: "{family}@latest" is not supported by nodeflow '
        "yet; use al2023, al2 or bottlerocket"
    )


def test_a_windows_ami_family_with_selected_amis_names_the_field() -> None:
    spec = {"amiFamily": "Windows2022", "amiSelectorTerms": [{"tags": {"team": "a"}}]}
    with pytest.raises(NodeClassNotReadyError, match=r'spec\.amiFamily: "Windows2022" is not supported.*or Custom'):
        ami_family(node_class(**spec))
