"""User data per AMI family."""

from __future__ import annotations

import pytest
import yaml

from apis.ec2nodeclass import KubeletConfiguration
from cloudprovider.aws.userdata import BootstrapOptions, render

OPTIONS = BootstrapOptions(
    cluster_name="prod",
    cluster_endpoint="https://example.eks.amazonaws.com",
    labels={"team": "a", "karpenter.sh/nodepool": "default"},
    taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
    kubelet=KubeletConfiguration(max_pods=50),
)


def test_al2023_is_a_mime_nodeconfig_with_labels_and_taints() -> None:
    text = render("AL2023", OPTIONS)
    assert text.startswith("MIME-Version: 1.0")
    body = text.split("Content-Type: application/node.eks.aws\n\n", 1)[1].split("\n--//--", 1)[0]
    config = yaml.safe_load(body)
    assert config["kind"] == "NodeConfig"
    assert config["spec"]["cluster"]["name"] == "prod"
    flags = config["spec"]["kubelet"]["flags"]
    assert "--node-labels=karpenter.sh/nodepool=default,team=a" in flags
    assert "--register-with-taints=gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute" in flags
    assert config["spec"]["kubelet"]["config"]["maxPods"] == 50


def test_al2_calls_bootstrap_sh() -> None:
    text = render("AL2", OPTIONS)
    assert "/etc/eks/bootstrap.sh 'prod' --apiserver-endpoint 'https://example.eks.amazonaws.com'" in text
    assert "--register-with-taints=gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute" in text
    assert "--max-pods=50" in text


def test_bottlerocket_is_toml_with_taints() -> None:
    text = render("Bottlerocket", OPTIONS)
    assert '[settings.kubernetes]\ncluster-name = "prod"' in text
    assert '"karpenter.sh/unregistered" = [":NoExecute"]' in text
    assert '"gpu" = ["true:NoSchedule"]' in text
    assert "max-pods = 50" in text


def test_custom_user_data_is_merged_or_passed_through() -> None:
    custom = BootstrapOptions(cluster_name="prod", custom_user_data="#!/bin/bash\necho hi\n")
    assert render("Custom", custom) == "#!/bin/bash\necho hi\n"
    assert "echo hi" in render("AL2023", custom)


def test_unsupported_family_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"spec\.amiFamily"):
        render("Windows2022", OPTIONS)
