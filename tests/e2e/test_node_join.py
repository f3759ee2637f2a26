"""Nodes launched by the stack's worker carry what a node needs to join the cluster, read by the worker
from the seeded EKS cluster (eks:DescribeCluster on moto), with no endpoint setting."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from devstack.stack import DevStack
from tests.e2e.conftest import deployment
from tests.userdata_parsing import node_config

pytestmark = pytest.mark.e2e


def launch_template_user_data(stack: DevStack) -> list[str]:
    ec2: Any = stack.ec2
    names = [t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]]
    out = []
    for name in names:
        if name.startswith("karpenter.k8s.aws/"):
            version = ec2.describe_launch_template_versions(LaunchTemplateName=name)["LaunchTemplateVersions"][0]
            out.append(base64.b64decode(version["LaunchTemplateData"]["UserData"]).decode())
    return out


def test_should_launch_nodes_whose_user_data_joins_the_described_cluster(stack: DevStack) -> None:
    stack.apply_text(deployment("join", 1))
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    configs = [node_config(text) for text in launch_template_user_data(stack) if "application/node.eks.aws" in text]
    assert configs
    for config in configs:
        cluster = config["spec"]["cluster"]
        assert cluster["name"] == stack.config.cluster_name
        assert cluster["apiServerEndpoint"] == stack.kube_url
        # the CA that signed the API server's certificate, so a node's kubelet can verify what it joins
        assert base64.b64decode(cluster["certificateAuthority"]) == stack.config.ca_file.read_bytes()
        assert cluster["cidr"] == "10.100.0.0/16"
        assert config["spec"]["kubelet"]["config"]["clusterDNS"] == ["10.100.0.10"]
