"""Windows user data as Karpenter renders it: one `<powershell>` block, the node class's own PowerShell
first, then `& $EKSBootstrapScriptFile` (the AMI's Start-EKSBootstrap.ps1) with the cluster's name,
endpoint, CA, the kubelet flags in -KubeletExtraArgs and the DNS IP."""

from __future__ import annotations

import dataclasses

import pytest

from apis.ec2nodeclass import KubeletConfiguration
from cloudprovider.aws.launch.userdata import BootstrapOptions, render
from tests.userdata_parsing import kubelet_extra_args, powershell_block, windows_bootstrap

CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMuLi4KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
OPTIONS = BootstrapOptions(
    cluster_name="prod",
    cluster_endpoint="https://example.eks.amazonaws.com",
    ca_bundle=CA,
    service_cidr="10.100.0.0/16",
    dns_ip="10.100.0.10",
    labels={"team": "a", "karpenter.sh/nodepool": "windows2022"},
    taints=[{"key": "os", "value": "windows", "effect": "NoSchedule"}],
)


@pytest.mark.parametrize("family", ["Windows2019", "Windows2022", "Windows2025"])
def test_the_bootstrap_call_carries_everything_a_node_needs_to_join(family: str) -> None:
    before, args = windows_bootstrap(render(family, OPTIONS))
    assert before == ""
    assert args == {
        "EKSClusterName": "prod",
        "APIServerEndpoint": "https://example.eks.amazonaws.com",
        "Base64ClusterCA": CA,
        "KubeletExtraArgs": args["KubeletExtraArgs"],
        "DNSClusterIP": "10.100.0.10",
    }
    assert kubelet_extra_args(render(family, OPTIONS)) == {
        "--node-labels": "karpenter.sh/nodepool=windows2022,team=a",
        "--register-with-taints": "os=windows:NoSchedule,karpenter.sh/unregistered:NoExecute",
    }


def test_label_and_taint_lists_are_double_quoted_as_karpenter_writes_them() -> None:
    extra = windows_bootstrap(render("Windows2022", OPTIONS))[1]["KubeletExtraArgs"]
    assert extra == (
        '--node-labels="karpenter.sh/nodepool=windows2022,team=a" '
        '--register-with-taints="os=windows:NoSchedule,karpenter.sh/unregistered:NoExecute"'
    )


def test_kubelet_settings_go_through_kubelet_extra_args_and_cluster_dns_through_dns_cluster_ip() -> None:
    kubelet = KubeletConfiguration.model_validate(
        {
            "maxPods": 30,
            "podsPerCore": 4,
            "systemReserved": {"memory": "1Gi", "cpu": "100m"},
            "evictionHard": {"memory.available": "5%"},
            "imageGCHighThresholdPercent": 85,
            "clusterDNS": ["10.0.0.53"],
        }
    )
    text = render("Windows2022", dataclasses.replace(OPTIONS, kubelet=kubelet))
    flags = kubelet_extra_args(text)
    assert flags["--max-pods"] == "30"
    assert flags["--pods-per-core"] == "4"
    assert flags["--system-reserved"] == "cpu=100m,memory=1Gi"
    assert flags["--eviction-hard"] == "memory.available<5%"
    assert flags["--image-gc-high-threshold"] == "85"
    assert windows_bootstrap(text)[1]["DNSClusterIP"] == "10.0.0.53"


def test_the_node_class_user_data_runs_first_inside_the_same_powershell_block() -> None:
    custom = 'Write-Host "preparing"\n[Environment]::SetEnvironmentVariable("team", "a", "Machine")\n'
    text = render("Windows2022", dataclasses.replace(OPTIONS, custom_user_data=custom))
    before, args = windows_bootstrap(text)
    assert before == custom
    assert args["EKSClusterName"] == "prod"
    assert powershell_block(text).index("preparing") < powershell_block(text).index("Start-EKSBootstrap.ps1")


def test_unknown_ca_and_dns_ip_are_left_out_and_quotes_are_escaped() -> None:
    bare = BootstrapOptions(cluster_name="it's", cluster_endpoint="https://e")
    args = windows_bootstrap(render("Windows2022", bare))[1]
    assert set(args) == {"EKSClusterName", "APIServerEndpoint", "KubeletExtraArgs"}
    assert args["EKSClusterName"] == "it's"
    assert args["KubeletExtraArgs"] == '--register-with-taints="karpenter.sh/unregistered:NoExecute"'
