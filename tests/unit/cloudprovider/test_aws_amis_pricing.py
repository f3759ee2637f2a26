"""AMI alias parameter names and the shipped price table."""

from __future__ import annotations

import pytest

from cloudprovider.aws.nodeclass.amis import alias_parameters, parse_alias
from cloudprovider.aws.pricing.tables import PriceTable, load_price_table


def test_al2023_latest_resolves_through_the_eks_parameters() -> None:
    names = [p.name for p in alias_parameters("al2023@latest", "1.32")]
    assert "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id" in names
    assert "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/arm64/nvidia/recommended/image_id" in names


def test_pinned_versions() -> None:
    al2 = [p.name for p in alias_parameters("al2@v20240807", "1.30")]
    assert "/aws/service/eks/optimized-ami/1.30/amazon-linux-2/amazon-eks-node-1.30-v20240807/image_id" in al2
    assert len(set(al2)) == 3  # no arm64 GPU AMI for AL2
    br = [p.name for p in alias_parameters("bottlerocket@v1.20.0", "1.30")]
    assert "/aws/service/bottlerocket/aws-k8s-1.30/x86_64/1.20.0/image_id" in br


def test_neuron_types_get_each_familys_neuron_ami() -> None:
    """AL2023 publishes a Neuron AMI; AL2's GPU AMI and Bottlerocket's standard AMI serve Neuron types."""

    def neuron(alias: str) -> list[str]:
        return [p.name for p in alias_parameters(alias, "1.32") if p.variant == "neuron"]

    assert neuron("al2023@latest") == [
        "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/neuron/recommended/image_id"
    ]
    assert neuron("al2@latest") == ["/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id"]
    assert neuron("bottlerocket@latest") == ["/aws/service/bottlerocket/aws-k8s-1.32/x86_64/latest/image_id"]


@pytest.mark.parametrize("alias", ["al2023", "ubuntu@latest", "al2@", "al2@20240807"])
def test_bad_aliases_name_the_accepted_form(alias: str) -> None:
    with pytest.raises(ValueError, match="alias"):
        parse_alias(alias)


def test_price_table_ships_with_common_types() -> None:
    table = load_price_table()
    assert table.on_demand("m5.large") == pytest.approx(0.096)
    assert table.on_demand("no-such.type") is None
    assert len(table.prices) > 1000


def test_price_table_rejects_bad_prices() -> None:
    with pytest.raises(ValueError, match=r'prices\["m5\.large"\]'):
        PriceTable.from_json('{"prices": {"m5.large": "cheap"}}')
