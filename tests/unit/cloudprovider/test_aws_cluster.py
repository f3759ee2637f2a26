"""What a node needs to join: the DNS IP derivation and settings completed from DescribeCluster."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from cloudprovider.aws.nodeclass.cluster import (
    ClusterConnection,
    cluster_dns_ip,
    describe_cluster,
    resolve_cluster_connection,
)
from cloudprovider.errors import CloudProviderError

DESCRIBED = {
    "cluster": {
        "name": "prod",
        "endpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
        "certificateAuthority": {"data": "Q0E="},
        "kubernetesNetworkConfig": {"serviceIpv4Cidr": "172.20.0.0/16", "ipFamily": "ipv4"},
    }
}


@pytest.mark.parametrize(
    ("cidr", "dns"),
    [
        ("10.100.0.0/16", "10.100.0.10"),
        ("172.20.0.0/16", "172.20.0.10"),
        ("192.168.64.0/24", "192.168.64.10"),
        ("10.96.0.0/12", "10.96.0.10"),
        ("fd30:1c53:5f8a::/108", "fd30:1c53:5f8a::a"),
        ("fdc4:7e0f:2b3d:100::/108", "fdc4:7e0f:2b3d:100::a"),
    ],
)
def test_dns_ip_is_the_tenth_address_of_the_service_cidr(cidr: str, dns: str) -> None:
    assert cluster_dns_ip(cidr) == dns
    assert ClusterConnection("c", service_cidr=cidr).dns_ip == dns


def test_dns_ip_refuses_what_is_not_a_service_cidr() -> None:
    with pytest.raises(ValueError):
        cluster_dns_ip("not-a-cidr")
    with pytest.raises(ValueError, match="too small"):
        cluster_dns_ip("10.0.0.0/29")
    assert ClusterConnection("c").dns_ip == ""


class FakeEKS:
    def __init__(self, *answers: dict[str, Any] | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def describe_cluster(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def aws_error(code: str, status: int = 400) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "DescribeCluster")


def test_describe_cluster_reads_endpoint_ca_cidr_and_family() -> None:
    eks = FakeEKS(DESCRIBED)
    found = resolve_cluster_connection(eks, "prod")
    assert eks.calls == [{"name": "prod"}]
    assert found == ClusterConnection(
        "prod", "https://ABC.gr7.us-west-2.eks.amazonaws.com", "Q0E=", "172.20.0.0/16", "ipv4"
    )
    assert found.dns_ip == "172.20.0.10"


def test_ipv6_cluster_uses_the_ipv6_service_cidr() -> None:
    network = {"serviceIpv4Cidr": "172.20.0.0/16", "serviceIpv6Cidr": "fd30:1c53:5f8a::/108", "ipFamily": "ipv6"}
    answer = {"cluster": {**DESCRIBED["cluster"], "kubernetesNetworkConfig": network}}
    found = resolve_cluster_connection(FakeEKS(answer), "prod")
    assert (found.service_cidr, found.ip_family, found.dns_ip) == ("fd30:1c53:5f8a::/108", "ipv6", "fd30:1c53:5f8a::a")


def test_settings_win_and_all_three_given_means_no_call() -> None:
    eks = FakeEKS()
    given = resolve_cluster_connection(eks, "prod", endpoint="https://e", ca_bundle="X", service_cidr="10.100.0.0/16")
    assert eks.calls == []
    assert given == ClusterConnection("prod", "https://e", "X", "10.100.0.0/16", "ipv4")
    partly = resolve_cluster_connection(FakeEKS(DESCRIBED), "prod", endpoint="https://mine")
    assert (partly.endpoint, partly.ca_bundle, partly.service_cidr) == ("https://mine", "Q0E=", "172.20.0.0/16")


def test_a_bad_service_cidr_setting_names_the_setting() -> None:
    with pytest.raises(ValueError, match="cluster_service_cidr"):
        resolve_cluster_connection(FakeEKS(), "prod", endpoint="e", ca_bundle="c", service_cidr="10.0.0.0/33")


def test_throttling_is_retried_with_backoff() -> None:
    eks = FakeEKS(aws_error("ThrottlingException"), aws_error("ServiceUnavailableException", 503), DESCRIBED)
    sleeps: list[float] = []
    found = describe_cluster(eks, "prod", sleep=sleeps.append, backoff_seconds=0.5)
    assert found.endpoint == DESCRIBED["cluster"]["endpoint"]
    assert sleeps == [0.5, 1.0]


def test_retries_end_and_permanent_errors_are_not_retried() -> None:
    with pytest.raises(CloudProviderError, match="Throttling"):
        describe_cluster(FakeEKS(*[aws_error("ThrottlingException")] * 3), "prod", attempts=3, sleep=lambda _: None)
    eks = FakeEKS(aws_error("ResourceNotFoundException", 404))
    with pytest.raises(CloudProviderError, match="cluster_ca_bundle") as raised:
        resolve_cluster_connection(eks, "prod")
    assert "ResourceNotFoundException" in str(raised.value)
    assert not raised.value.retryable
    assert len(eks.calls) == 1
