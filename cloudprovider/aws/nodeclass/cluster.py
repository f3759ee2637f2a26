"""What a node needs to join the EKS cluster: API endpoint, CA bundle, service CIDR and the DNS IP.

`resolve_cluster_connection` takes what the settings give and asks `eks:DescribeCluster` for the rest,
once (the worker calls it at start and keeps the answer). Settings win over DescribeCluster, so a
deployment without the `eks:DescribeCluster` permission can give all three values itself.

The DNS cluster IP (`cluster_dns_ip`) derives from the service CIDR the way EKS's own bootstrap does
(AL2's bootstrap.sh and AL2023's nodeadm): the tenth address of the range, i.e. `<prefix>.10` for IPv4
(10.100.0.10 for 10.100.0.0/16, 172.20.0.10 for 172.20.0.0/16) and `<prefix>::a` for IPv6. bootstrap.sh
writes it as "replace the last octet by 10" / "append `a` to the address"; on the CIDRs EKS accepts
(IPv4 /12 to /24, IPv6 /108 on a `::` boundary) that is the same address as network address + 10,
which is what this module computes. Karpenter reads the `kube-system/kube-dns` Service's ClusterIP
instead; EKS creates that Service at exactly this address, and `spec.kubelet.clusterDNS` on the node
class still overrides it (see `cloudprovider.aws.launch.userdata`).
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cloudprovider.aws.errors import call
from cloudprovider.aws.sdk import EKSAPI
from cloudprovider.errors import CloudProviderError

DNS_HOST_OFFSET = 10
DESCRIBE_ATTEMPTS = 5
DESCRIBE_BACKOFF_SECONDS = 1.0


@dataclass(frozen=True)
class ClusterConnection:
    """The cluster as a joining node sees it. Empty strings mean "unknown": without the endpoint and
    the CA a node cannot join a real EKS cluster; without the CIDR the AMI picks its default DNS IP.

    ca_bundle: base64 of the PEM CA certificate(s), as DescribeCluster's `certificateAuthority.data`.
    service_cidr: the Kubernetes service range (IPv4 or IPv6, per `ip_family`).
    """

    name: str
    endpoint: str = ""
    ca_bundle: str = ""
    service_cidr: str = ""
    ip_family: str = "ipv4"

    @property
    def dns_ip(self) -> str:
        """The cluster DNS Service IP derived from `service_cidr` ("" when the CIDR is unknown)."""
        return cluster_dns_ip(self.service_cidr) if self.service_cidr else ""

    def complete(self) -> bool:
        return bool(self.endpoint and self.ca_bundle and self.service_cidr)


def cluster_dns_ip(service_cidr: str) -> str:
    """The tenth address of `service_cidr` (IPv4 or IPv6), where EKS puts the kube-dns Service.
    Raises ValueError for text that is not a CIDR or a range too small to hold it."""
    network = ipaddress.ip_network(service_cidr.strip(), strict=False)
    if network.num_addresses <= DNS_HOST_OFFSET:
        raise ValueError(f"service CIDR {service_cidr} is too small to hold the cluster DNS address")
    return str(network.network_address + DNS_HOST_OFFSET)


def from_describe_cluster(name: str, response: dict[str, Any]) -> ClusterConnection:
    """A ClusterConnection from a DescribeCluster response (missing fields stay "")."""
    cluster = response.get("cluster", {})
    network = cluster.get("kubernetesNetworkConfig") or {}
    family = str(network.get("ipFamily") or "ipv4").lower()
    cidr = network.get("serviceIpv6Cidr") if family == "ipv6" else network.get("serviceIpv4Cidr")
    return ClusterConnection(
        name=name,
        endpoint=str(cluster.get("endpoint") or ""),
        ca_bundle=str((cluster.get("certificateAuthority") or {}).get("data") or ""),
        service_cidr=str(cidr or ""),
        ip_family=family,
    )


def describe_cluster(
    eks: EKSAPI,
    name: str,
    *,
    attempts: int = DESCRIBE_ATTEMPTS,
    backoff_seconds: float = DESCRIBE_BACKOFF_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> ClusterConnection:
    """DescribeCluster for `name`, retrying retryable errors (throttling, 5xx, unreachable endpoint; see
    `cloudprovider.aws.errors`) up to `attempts` times with doubling backoff. Raises the translated
    CloudProviderError otherwise (e.g. ResourceNotFoundException, AccessDeniedException)."""
    for attempt in range(1, attempts + 1):
        try:
            return from_describe_cluster(name, call("DescribeCluster", eks.describe_cluster, name=name))
        except CloudProviderError as error:
            if not error.retryable or attempt == attempts:
                raise
            sleep(backoff_seconds * 2 ** (attempt - 1))
    raise AssertionError("unreachable")


def resolve_cluster_connection(
    eks: EKSAPI | None,
    name: str,
    *,
    endpoint: str = "",
    ca_bundle: str = "",
    service_cidr: str = "",
    describe: Callable[[EKSAPI, str], ClusterConnection] = describe_cluster,
) -> ClusterConnection:
    """The settings' values, completed from DescribeCluster when one of them is empty (and `eks` is
    given). Raises CloudProviderError when DescribeCluster fails, naming the settings that avoid it,
    and ValueError when the resulting service CIDR is not a CIDR."""
    if service_cidr:
        try:
            cluster_dns_ip(service_cidr)
        except ValueError as error:
            raise ValueError(f"cluster_service_cidr {service_cidr!r}: {error}") from None
    given = ClusterConnection(name, endpoint, ca_bundle, service_cidr, _family(service_cidr))
    if given.complete() or eks is None:
        return given
    try:
        described = describe(eks, name)
    except CloudProviderError as error:
        raise CloudProviderError(
            f"EKS cluster {name}: {error}; give the cluster_endpoint, cluster_ca_bundle and "
            "cluster_service_cidr settings, or allow eks:DescribeCluster",
            retryable=error.retryable,
        ) from error
    cidr = service_cidr or described.service_cidr
    resolved = ClusterConnection(
        name=name,
        endpoint=endpoint or described.endpoint,
        ca_bundle=ca_bundle or described.ca_bundle,
        service_cidr=cidr,
        ip_family=_family(cidr) if service_cidr else described.ip_family,
    )
    if resolved.service_cidr:
        cluster_dns_ip(resolved.service_cidr)
    return resolved


def _family(cidr: str) -> str:
    if not cidr:
        return "ipv4"
    return "ipv6" if ipaddress.ip_network(cidr.strip(), strict=False).version == 6 else "ipv4"
