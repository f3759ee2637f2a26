"""eks:DescribeCluster against the local stack's moto server, and the user data of nodes launched with
what it answers: every family's user data carries the name, endpoint, CA and DNS IP / CIDR a node
needs to join."""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from apis.ec2nodeclass import EC2NodeClass
from cloudprovider.aws.factory import new_aws_cloud_provider, resolve_eks_cluster
from cloudprovider.aws.nodeclass.cluster import ClusterConnection
from cloudprovider.aws.provider import AWSCloudProvider
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError
from cloudprovider.types import LaunchRequest
from devstack.aws.response_cache import default_cache_dir
from devstack.aws.server import MotoServer
from tests.userdata_parsing import bootstrap_argv, bottlerocket_kubernetes, flag, node_config
from workers.log_format import configure_logging
from workers.tracing import Tracing

CLUSTER = "join-cluster"
REGION = "us-west-2"
ENDPOINT = "https://join-cluster.example:6443"
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoServer]:
    with MotoServer(
        cluster_name=CLUSTER, region=REGION, cluster_endpoint=ENDPOINT, response_cache=default_cache_dir()
    ) as server:
        yield server


@pytest.fixture(scope="module")
def cluster(aws: MotoServer) -> ClusterConnection:
    return resolve_eks_cluster(REGION, aws.url, cluster_name=CLUSTER, credentials=("testing", "testing"))


@pytest.fixture(scope="module")
def provider(aws: MotoServer, cluster: ClusterConnection) -> AWSCloudProvider:
    return new_aws_cloud_provider(
        REGION, aws.url, cluster_name=CLUSTER, cluster=cluster, credentials=("testing", "testing"), max_attempts=2
    )


def test_describe_cluster_gives_endpoint_ca_and_service_cidr(cluster: ClusterConnection) -> None:
    assert cluster.name == CLUSTER
    assert cluster.endpoint == ENDPOINT
    assert base64.b64decode(cluster.ca_bundle).decode().startswith("-----BEGIN CERTIFICATE-----\n")
    assert (cluster.service_cidr, cluster.ip_family, cluster.dns_ip) == ("10.100.0.0/16", "ipv4", "10.100.0.10")


def test_settings_override_what_describe_cluster_answers(aws: MotoServer) -> None:
    given = resolve_eks_cluster(
        REGION, aws.url, cluster_name=CLUSTER, cluster_endpoint="https://mine", credentials=("testing", "testing")
    )
    assert given.endpoint == "https://mine"
    assert given.service_cidr == "10.100.0.0/16"


def test_an_unknown_cluster_fails_naming_the_settings(aws: MotoServer) -> None:
    with pytest.raises(CloudProviderError, match=r"ResourceNotFoundException.*cluster_ca_bundle") as raised:
        resolve_eks_cluster(REGION, aws.url, cluster_name="nobody", credentials=("testing", "testing"))
    assert not raised.value.retryable


def node_class(alias: str, name: str = "", **spec: object) -> EC2NodeClass:
    selector = [{"tags": {"karpenter.sh/discovery": CLUSTER}}]
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": name or alias.split("@")[0]},
            "spec": {
                "role": f"KarpenterNodeRole-{CLUSTER}",
                "amiSelectorTerms": [{"alias": alias}],
                "subnetSelectorTerms": selector,
                "securityGroupSelectorTerms": selector,
                **spec,
            },
        }
    )


def launch_request(klass: EC2NodeClass) -> LaunchRequest:
    return LaunchRequest.model_validate(
        {
            "node_claim_name": f"{klass.name}-claim",
            "node_pool": "default",
            "client_token": f"{klass.name}-token",
            "node_class": klass,
            "instance_types": ["m5.large"],
            "capacity_types": ["on-demand"],
        }
    )


def launched_user_data(aws: MotoServer, provider: AWSCloudProvider, alias: str) -> str:
    """Launch one claim with the alias's node class; the user data of the launch template with its AMI."""
    instance = provider.create(launch_request(node_class(alias)))
    ec2: Any = boto3.client("ec2", endpoint_url=aws.url, region_name=REGION, **KEYS)
    names = [t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]]
    datas = [
        ec2.describe_launch_template_versions(LaunchTemplateName=n)["LaunchTemplateVersions"][0]["LaunchTemplateData"]
        for n in names
        if n.startswith("karpenter.k8s.aws/")
    ]
    [data] = [d for d in datas if d["ImageId"] == instance.image_id]  # one template per AMI in this module
    return base64.b64decode(data["UserData"]).decode()


def test_al2023_node_joins_the_described_cluster(
    aws: MotoServer, provider: AWSCloudProvider, cluster: ClusterConnection
) -> None:
    config = node_config(launched_user_data(aws, provider, "al2023@latest"))
    assert config["spec"]["cluster"] == {
        "name": CLUSTER,
        "apiServerEndpoint": ENDPOINT,
        "certificateAuthority": cluster.ca_bundle,
        "cidr": "10.100.0.0/16",
    }
    assert config["spec"]["kubelet"]["config"]["clusterDNS"] == ["10.100.0.10"]


def test_al2_node_joins_the_described_cluster(
    aws: MotoServer, provider: AWSCloudProvider, cluster: ClusterConnection
) -> None:
    argv = bootstrap_argv(launched_user_data(aws, provider, "al2@latest"))
    assert argv[0] == CLUSTER
    assert flag(argv, "--apiserver-endpoint") == ENDPOINT
    assert flag(argv, "--b64-cluster-ca") == cluster.ca_bundle
    assert flag(argv, "--dns-cluster-ip") == "10.100.0.10"


def test_bottlerocket_node_joins_the_described_cluster(
    aws: MotoServer, provider: AWSCloudProvider, cluster: ClusterConnection
) -> None:
    kubernetes = bottlerocket_kubernetes(launched_user_data(aws, provider, "bottlerocket@latest"))
    assert kubernetes["cluster-name"] == CLUSTER
    assert kubernetes["api-server"] == ENDPOINT
    assert kubernetes["cluster-certificate"] == cluster.ca_bundle
    assert kubernetes["cluster-dns-ip"] == "10.100.0.10"


def test_bottlerocket_user_data_that_is_not_toml_makes_the_node_class_not_ready(provider: AWSCloudProvider) -> None:
    klass = node_class("bottlerocket@latest", "bad-toml", userData="#!/bin/bash\necho hi\n")
    with pytest.raises(NodeClassNotReadyError, match=r"EC2NodeClass bad-toml: spec\.userData is not valid TOML"):
        provider.create(launch_request(klass))


def test_traced_calls_record_operations_but_neither_user_data_nor_keys(aws: MotoServer) -> None:
    """With the worker's tracing hooks on every boto3 client (workers.tracing) and its JSON logs at DEBUG
    (workers.log_format): each EC2 call is a span named for its operation, and neither the spans nor the
    logs carry the EC2NodeClass's user data or the AWS keys."""
    secret, user_data = "trace-test-secret-key-5d1e", "#!/bin/bash\necho userdata-marker-7f3a\n"
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider)
    logs = io.StringIO()
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    configure_logging(logging.DEBUG, "json", logs)
    try:
        traced = new_aws_cloud_provider(
            REGION, aws.url, cluster_name=CLUSTER, credentials=("AKIATRACETEST", secret),
            instrument=tracing.instrument_boto3,
        )  # fmt: skip
        klass = node_class("al2@latest", name="traced", userData=user_data)
        request = launch_request(klass).model_copy(update={"instance_types": ["m6g.large"]})  # its own AMI
        with tracing.tracer.start_as_current_span("RunActivity:launch"):  # calls are traced within a trace
            instance = traced.create(request)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    spans = exporter.get_finished_spans()
    ec2 = [s for s in spans if s.name.startswith("EC2.")]
    assert ec2 and all(dict(s.attributes or {})["rpc.service"] == "EC2" for s in ec2)
    assert any(dict(s.attributes or {})["rpc.method"] in ("RunInstances", "CreateFleet") for s in ec2)
    assert instance.id
    ec2_client: Any = boto3.client("ec2", endpoint_url=aws.url, region_name=REGION, **KEYS)
    sent = [
        base64.b64decode(v["LaunchTemplateData"].get("UserData", "")).decode()
        for t in ec2_client.describe_launch_templates()["LaunchTemplates"]
        for v in ec2_client.describe_launch_template_versions(LaunchTemplateName=t["LaunchTemplateName"])[
            "LaunchTemplateVersions"
        ]
    ]
    assert any("userdata-marker-7f3a" in data for data in sent)  # it reached EC2, and only EC2
    recorded = logs.getvalue() + "".join(s.to_json() for s in spans)
    for leak in (secret, "userdata-marker-7f3a", base64.b64encode(user_data.encode()).decode()[:24]):
        assert leak not in recorded
