"""The only place that builds boto3 clients for the cloud provider."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import boto3
import botocore.session
from botocore.config import Config

from cloudprovider.aws.instancetypes.translate import DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
from cloudprovider.aws.interruption.queue import InterruptionQueue
from cloudprovider.aws.nodeclass.cluster import ClusterConnection, resolve_cluster_connection
from cloudprovider.aws.pricing.api import currency, fetch_on_demand_prices, pricing_endpoint_region
from cloudprovider.aws.pricing.tables import PriceTable
from cloudprovider.aws.provider import AWSCloudProvider
from cloudprovider.aws.ratelimit import EC2RateLimiter, rate_limited
from cloudprovider.aws.timestamps import parse_timestamp

# Sent in every request's User-Agent as `app/nodeflow`: CloudTrail shows which calls are nodeflow's.
USER_AGENT_APP_ID = "nodeflow"


def sdk_config(max_attempts: int = 3) -> Config:
    """Standard retry mode with few attempts: the workflow owns long retries with its own backoff."""
    return Config(
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        connect_timeout=5,
        read_timeout=30,
        user_agent_appid=USER_AGENT_APP_ID,
    )


# Called with each boto3 client the factory builds, before it is used (the worker registers its tracing
# hooks on the client's events with it; workers.tracing).
ClientHook = Callable[[Any], None]


def _client_factory(
    region: str,
    endpoint_url: str | None,
    credentials: tuple[str, str] | None,
    max_attempts: int,
    instrument: ClientHook | None = None,
) -> Callable[..., Any]:
    if not region:
        raise ValueError("new_aws_cloud_provider: region is required (e.g. us-west-2)")
    keys = {"aws_access_key_id": credentials[0], "aws_secret_access_key": credentials[1]} if credentials else {}
    core = botocore.session.get_session()
    core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=parse_timestamp)
    session = boto3.session.Session(botocore_session=core, region_name=region, **keys)
    config = sdk_config(max_attempts)

    def client(service: str, in_region: str | None = None):  # type: ignore[no-untyped-def]
        where = {"region_name": in_region} if in_region else {}
        built = session.client(service, endpoint_url=endpoint_url, config=config, **where)  # type: ignore[call-overload]
        if instrument is not None:
            instrument(built)
        return built

    return client


def new_aws_cloud_provider(
    region: str,
    endpoint_url: str | None = None,
    *,
    cluster_name: str,
    cluster_endpoint: str = "",
    cluster: ClusterConnection | None = None,
    kubernetes_version: str = "1.32",
    clock: Callable[[], float] = time.monotonic,
    credentials: tuple[str, str] | None = None,
    max_attempts: int = 3,
    ec2_limiter: EC2RateLimiter | None = None,
    reserved_capacity: bool = True,
    observe_fleet_batch: Callable[[int, float], None] | None = None,
    observe_launch_failure: Callable[[str, str, str, str], None] | None = None,
    instrument: ClientHook | None = None,
    pricing_api: bool = True,
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    reserved_enis: int = 0,
    dry_run: bool = True,
) -> AWSCloudProvider:
    """An AWSCloudProvider for `region`. `endpoint_url` points EC2, SSM, IAM and the Pricing API elsewhere
    (e.g. the local stack); `credentials` (access key id, secret) override the default credential chain;
    `cluster` (from `resolve_eks_cluster`) is what the launched nodes need to join. Every EC2 call first
    takes a token from `ec2_limiter` (by default one with EC2's default bucket sizes, for this provider
    alone). `reserved_capacity`: Karpenter's ReservedCapacity feature gate (see AWSCloudProvider);
    `observe_fleet_batch` is told the size and window of each CreateFleet batch, `observe_launch_failure` each
    offering a CreateFleet reports failing (AWSCloudProvider); `instrument` is called with each boto3
    client built. `pricing_api` False: on-demand prices stay the shipped table's (Karpenter's isolated VPC);
    else the price book may ask the Pricing API at its endpoint for the region (no call until refreshed).
    `vm_memory_overhead_percent` and `reserved_enis` shape every instance type (InstanceTypeSettings).
    `dry_run` False: no DryRun call checks the controller's authorization (Karpenter's `--disable-dry-run`)."""
    client = _client_factory(region, endpoint_url, credentials, max_attempts, instrument)
    return AWSCloudProvider(
        rate_limited(client("ec2"), ec2_limiter or EC2RateLimiter()),
        client("ssm"),
        client("iam"),
        region=region,
        cluster_name=cluster_name,
        cluster_endpoint=cluster_endpoint,
        cluster=cluster,
        kubernetes_version=kubernetes_version,
        pricing=client("pricing", pricing_endpoint_region(region)) if pricing_api else None,
        clock=clock,
        reserved_capacity=reserved_capacity,
        observe_fleet_batch=observe_fleet_batch,
        observe_launch_failure=observe_launch_failure,
        vm_memory_overhead_percent=vm_memory_overhead_percent,
        reserved_enis=reserved_enis,
        dry_run=dry_run,
    )


def fetch_price_table(
    region: str,
    endpoint_url: str | None = None,
    *,
    credentials: tuple[str, str] | None = None,
    max_attempts: int = 3,
) -> PriceTable:
    """`region`'s on-demand prices from the AWS Pricing API (at its endpoint for the region, or
    `endpoint_url`), as a table to ship (`cloudprovider.aws.pricing.tables`) dated now. Raises CloudProviderError."""
    client = _client_factory(region, endpoint_url, credentials, max_attempts)
    prices = fetch_on_demand_prices(client("pricing", pricing_endpoint_region(region)), region)
    return PriceTable(region, dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), prices, currency(region))


def resolve_eks_cluster(
    region: str,
    endpoint_url: str | None = None,
    *,
    cluster_name: str,
    cluster_endpoint: str = "",
    cluster_ca_bundle: str = "",
    cluster_service_cidr: str = "",
    credentials: tuple[str, str] | None = None,
    max_attempts: int = 3,
    instrument: ClientHook | None = None,
) -> ClusterConnection:
    """The given values completed from `eks:DescribeCluster` on `endpoint_url` (or real AWS), per
    `cloudprovider.aws.nodeclass.cluster.resolve_cluster_connection` (no call when all three are given)."""
    client = _client_factory(region, endpoint_url, credentials, max_attempts, instrument)
    return resolve_cluster_connection(
        client("eks"),
        cluster_name,
        endpoint=cluster_endpoint,
        ca_bundle=cluster_ca_bundle,
        service_cidr=cluster_service_cidr,
    )


def new_interruption_queue(
    region: str,
    endpoint_url: str | None = None,
    *,
    queue_name: str,
    credentials: tuple[str, str] | None = None,
    max_attempts: int = 3,
    instrument: ClientHook | None = None,
) -> InterruptionQueue:
    """The interruption queue `queue_name` (cloudprovider.aws.interruption.queue) on an SQS client of
    `region`; `endpoint_url` points it elsewhere (the local stack). No call until first used."""
    client = _client_factory(region, endpoint_url, credentials, max_attempts, instrument)
    return InterruptionQueue(client("sqs"), queue_name)
