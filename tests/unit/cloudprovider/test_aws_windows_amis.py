"""Windows AMI aliases as Karpenter resolves them: `windows2019|2022|2025@latest` only, one SSM public
parameter per Windows Server release and Kubernetes version (the Core edition, x86_64), Windows Server 2025
only on Kubernetes 1.35 or later; a Windows node class resolves to the AMI that parameter names."""

from __future__ import annotations

from typing import Any

import pytest

from cloudprovider.aws.nodeclass.amis import AliasParameter, alias_parameters, parse_alias
from cloudprovider.aws.nodeclass.resolve import NodeClassResolver, ami_family
from cloudprovider.errors import NodeClassNotReadyError
from tests.unit.cloudprovider.builders import node_class


@pytest.mark.parametrize(
    ("alias", "family", "release"),
    [("windows2019@latest", "Windows2019", "2019"), ("windows2022@latest", "Windows2022", "2022")],
)
def test_a_windows_alias_names_the_latest_core_eks_optimized_parameter(alias: str, family: str, release: str) -> None:
    assert parse_alias(alias) == (family, "latest")
    assert alias_parameters(alias, "1.32") == [
        AliasParameter(
            f"/aws/service/ami-windows-latest/Windows_Server-{release}-English-Core-EKS_Optimized-1.32/image_id",
            "x86_64",
            "standard",
        )
    ]


@pytest.mark.parametrize("alias", ["windows2019@v20240807", "windows2022@2024.08.07", "windows2025@v1"])
def test_a_windows_alias_cannot_be_pinned(alias: str) -> None:
    with pytest.raises(ValueError, match=r'windows families may only specify version "latest"'):
        parse_alias(alias)


def test_windows_server_2025_needs_kubernetes_1_35() -> None:
    with pytest.raises(ValueError, match=r"Windows2025 requires Kubernetes 1\.35 or later; the cluster runs 1\.34"):
        alias_parameters("windows2025@latest", "1.34")
    [parameter] = alias_parameters("windows2025@latest", "1.35")
    assert parameter.name == (
        "/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id"
    )


@pytest.mark.parametrize("family", ["windows2019", "windows2022", "windows2025"])
def test_a_windows_alias_gives_its_family(family: str) -> None:
    assert ami_family(node_class(amiSelectorTerms=[{"alias": f"{family}@latest"}])) == f"W{family[1:]}"


def test_a_windows_ami_family_with_selected_amis_is_supported() -> None:
    spec = {"amiFamily": "Windows2022", "amiSelectorTerms": [{"tags": {"team": "a"}}]}
    assert ami_family(node_class(**spec)) == "Windows2022"


class FakeSSM:
    def __init__(self, parameters: dict[str, str]) -> None:
        self.parameters = parameters
        self.asked: list[str] = []

    def get_parameter(self, Name: str) -> dict[str, Any]:
        self.asked.append(Name)
        return {"Parameter": {"Value": self.parameters[Name]}}


class FakeEC2:
    def __init__(self, images: list[dict[str, Any]]) -> None:
        self.images = images

    def describe_images(self, **kwargs: Any) -> dict[str, Any]:
        return {"Images": [i for i in self.images if i["ImageId"] in kwargs.get("ImageIds", [])]}


WINDOWS_2022 = "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.32/image_id"
IMAGE = {
    "ImageId": "ami-0win2022",
    "Name": "Windows_Server-2022-English-Core-EKS_Optimized-1.32-2025.07.15",
    "Architecture": "x86_64",
    "Platform": "windows",
    "CreationDate": "2025-07-15T00:00:00.000Z",
    "State": "available",
}


def resolver(k8s: str = "1.32") -> tuple[NodeClassResolver, FakeSSM]:
    ssm = FakeSSM({WINDOWS_2022: "ami-0win2022"})
    return NodeClassResolver(FakeEC2([IMAGE]), ssm, "c", "us-west-2", k8s), ssm  # type: ignore[arg-type]


def test_a_windows2022_node_class_resolves_to_the_ami_its_parameter_names() -> None:
    nodes, ssm = resolver()
    [ami] = nodes.amis(node_class(amiSelectorTerms=[{"alias": "windows2022@latest"}]))
    assert ssm.asked == [WINDOWS_2022]
    assert ami.as_status() == {"id": "ami-0win2022", "name": IMAGE["Name"], "arch": "x86_64", "variant": "standard"}


def test_a_windows2025_node_class_on_an_older_cluster_is_not_ready_naming_the_field() -> None:
    nodes, ssm = resolver("1.32")
    with pytest.raises(NodeClassNotReadyError) as raised:
        nodes.amis(node_class(amiSelectorTerms=[{"alias": "windows2025@latest"}]))
    assert str(raised.value) == (
        "EC2NodeClass default: spec.amiSelectorTerms[0].alias: Windows2025 requires Kubernetes 1.35 or later; "
        "the cluster runs 1.32"
    )
    assert ssm.asked == []
