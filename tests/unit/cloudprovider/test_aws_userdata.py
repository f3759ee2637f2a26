"""User data per AMI family, parsed the way each AMI reads it: MIME parts, then the nodeadm NodeConfig
(YAML), the bootstrap.sh command line (shlex) or the Bottlerocket settings (TOML)."""

from __future__ import annotations

import shlex
import tomllib

import pytest

from apis.ec2nodeclass import KubeletConfiguration
from cloudprovider.aws.userdata import BootstrapOptions, render
from tests.userdata_parsing import bootstrap_argv, bottlerocket_kubernetes, flag, mime_parts, node_config

CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMuLi4KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
OPTIONS = BootstrapOptions(
    cluster_name="prod",
    cluster_endpoint="https://example.eks.amazonaws.com",
    ca_bundle=CA,
    service_cidr="10.100.0.0/16",
    dns_ip="10.100.0.10",
    labels={"team": "a", "karpenter.sh/nodepool": "default"},
    taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
    kubelet=KubeletConfiguration(max_pods=50),
)
IPV6 = BootstrapOptions(
    cluster_name="prod6",
    cluster_endpoint="https://six.eks.amazonaws.com",
    ca_bundle=CA,
    service_cidr="fd30:1c53:5f8a::/108",
    dns_ip="fd30:1c53:5f8a::a",
    ip_family="ipv6",
)


def test_al2023_node_config_carries_everything_a_node_needs_to_join() -> None:
    config = node_config(render("AL2023", OPTIONS))
    assert config["spec"]["cluster"] == {
        "name": "prod",
        "apiServerEndpoint": "https://example.eks.amazonaws.com",
        "certificateAuthority": CA,
        "cidr": "10.100.0.0/16",
    }
    kubelet = config["spec"]["kubelet"]
    assert kubelet["config"] == {"clusterDNS": ["10.100.0.10"], "maxPods": 50}
    assert "--node-labels=karpenter.sh/nodepool=default,team=a" in kubelet["flags"]
    assert "--register-with-taints=gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute" in kubelet["flags"]


def test_al2023_ipv6_and_the_node_classs_cluster_dns_wins() -> None:
    config = node_config(render("AL2023", IPV6))
    assert config["spec"]["cluster"]["cidr"] == "fd30:1c53:5f8a::/108"
    assert config["spec"]["kubelet"]["config"]["clusterDNS"] == ["fd30:1c53:5f8a::a"]
    custom = BootstrapOptions(**{**OPTIONS.__dict__, "kubelet": KubeletConfiguration(cluster_dns=["10.0.0.53"])})
    assert node_config(render("AL2023", custom))["spec"]["kubelet"]["config"]["clusterDNS"] == ["10.0.0.53"]


def test_al2023_keeps_the_custom_part_first() -> None:
    custom = BootstrapOptions(cluster_name="prod", custom_user_data="#!/bin/bash\necho hi\n")
    parts = mime_parts(render("AL2023", custom))
    assert [kind for kind, _ in parts] == ["text/x-shellscript", "application/node.eks.aws"]
    assert "echo hi" in parts[0][1]


def test_al2_bootstrap_command_line_carries_everything_a_node_needs_to_join() -> None:
    argv = bootstrap_argv(render("AL2", OPTIONS))
    assert argv[0] == "prod"
    assert flag(argv, "--apiserver-endpoint") == "https://example.eks.amazonaws.com"
    assert flag(argv, "--b64-cluster-ca") == CA
    assert flag(argv, "--dns-cluster-ip") == "10.100.0.10"
    assert flag(argv, "--use-max-pods") == "false"
    assert "--ip-family" not in argv
    extra = shlex.split(flag(argv, "--kubelet-extra-args") or "")
    assert extra == [
        "--node-labels=karpenter.sh/nodepool=default,team=a",
        "--register-with-taints=gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute",
        "--max-pods=50",
    ]


def test_al2_ipv6() -> None:
    argv = bootstrap_argv(render("AL2", IPV6))
    assert flag(argv, "--ip-family") == "ipv6"
    assert flag(argv, "--service-ipv6-cidr") == "fd30:1c53:5f8a::/108"
    assert flag(argv, "--dns-cluster-ip") == "fd30:1c53:5f8a::a"


def test_bottlerocket_settings_carry_everything_a_node_needs_to_join() -> None:
    kubernetes = bottlerocket_kubernetes(render("Bottlerocket", OPTIONS))
    assert kubernetes["cluster-name"] == "prod"
    assert kubernetes["api-server"] == "https://example.eks.amazonaws.com"
    assert kubernetes["cluster-certificate"] == CA
    assert kubernetes["cluster-dns-ip"] == "10.100.0.10"
    assert kubernetes["max-pods"] == 50
    assert kubernetes["node-labels"] == {"karpenter.sh/nodepool": "default", "team": "a"}
    assert kubernetes["node-taints"] == {"gpu": ["true:NoSchedule"], "karpenter.sh/unregistered": [":NoExecute"]}


def test_bottlerocket_merges_the_users_toml_key_by_key() -> None:
    users = "\n".join(
        [
            "[settings.kubernetes]",
            'cluster-name = "wrong"',
            'image-gc-high-threshold-percent = "85"',
            "[settings.kubernetes.node-labels]",
            'mine = "yes"',
            "[settings.kubernetes.node-taints]",
            'gpu = ["false:NoExecute"]',
            "[settings.host-containers.admin]",
            "enabled = true",
        ]
    )
    text = render("Bottlerocket", BootstrapOptions(**{**OPTIONS.__dict__, "custom_user_data": users}))
    assert text.count("[settings.kubernetes]") == 1
    settings = tomllib.loads(text)["settings"]  # would raise on a table declared twice
    kubernetes = settings["kubernetes"]
    assert kubernetes["cluster-name"] == "prod"  # nodeflow's join settings win
    assert kubernetes["api-server"] == "https://example.eks.amazonaws.com"
    assert kubernetes["image-gc-high-threshold-percent"] == "85"  # the user's other keys stay
    assert kubernetes["node-labels"] == {"mine": "yes", "karpenter.sh/nodepool": "default", "team": "a"}
    assert kubernetes["node-taints"]["gpu"] == ["false:NoExecute", "true:NoSchedule"]
    assert settings["host-containers"] == {"admin": {"enabled": True}}


def test_bottlerocket_refuses_user_data_that_is_not_toml() -> None:
    bad = BootstrapOptions(cluster_name="prod", custom_user_data="#!/bin/bash\necho hi\n")
    with pytest.raises(ValueError, match=r"spec\.userData is not valid TOML"):
        render("Bottlerocket", bad)


def test_unknown_dns_ip_and_cidr_are_left_out() -> None:
    bare = BootstrapOptions(cluster_name="prod", cluster_endpoint="https://e", ca_bundle=CA)
    assert "cidr" not in node_config(render("AL2023", bare))["spec"]["cluster"]
    assert "--dns-cluster-ip" not in bootstrap_argv(render("AL2", bare))
    assert "cluster-dns-ip" not in bottlerocket_kubernetes(render("Bottlerocket", bare))


def test_custom_user_data_is_passed_through() -> None:
    custom = BootstrapOptions(cluster_name="prod", custom_user_data="#!/bin/bash\necho hi\n")
    assert render("Custom", custom) == "#!/bin/bash\necho hi\n"


def test_unsupported_family_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"spec\.amiFamily"):
        render("Windows2022", OPTIONS)
