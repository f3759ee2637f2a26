"""Seed a local-stack moto server with what a Karpenter-managed EKS cluster has around it (idempotent).

- a VPC with three /20 subnets (zones a, b, c) and a security group, tagged `karpenter.sh/discovery=<cluster>`;
- the SSM public parameters of the EKS-optimized AMI aliases (AL2023, AL2, Bottlerocket; x86_64/arm64,
  standard/nvidia; Kubernetes 1.28-1.34; `latest` and pinned releases), each pointing at an AMI that
  DescribeImages returns with a sensible name and architecture;
- the Windows ones (Windows Server 2019, 2022, 2025 Core; `latest` only, x86_64), each pointing at an AMI
  with `Platform: windows` (so an instance launched from it says so too) and its root on /dev/sda1;
- two team-built AMIs (`CUSTOM_AMIS`, tagged `CUSTOM_AMI_TAG`, one name prefix): an older current one and
  a newer deprecated one, so a name or tag selection can be seen to skip the deprecated one and an id
  pin to choose it;
- the IAM role `KarpenterNodeRole-<cluster>`;
- the EKS cluster `<cluster>` (service CIDR 10.100.0.0/16, IPv4), whose DescribeCluster answers the
  given endpoint (the Kubernetes emulator's URL in the local stack) and a PEM-looking CA bundle, so
  the worker reads them as it would on EKS.

Network, IAM and the cluster go through the API (boto3); SSM parameters under /aws/ and Amazon-owned
AMIs cannot be created through the API, and moto makes up a cluster's endpoint and CA, so those are
written into moto's backends in this process.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from typing import Any

import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.ec2.models.amis import Ami
from moto.eks.models import eks_backends
from moto.ssm.models import Parameter, ssm_backends

from cloudprovider.aws.nodeclass.amis import (
    ALIAS_FAMILIES,
    WINDOWS_RELEASES,
    alias_parameters,
    is_windows,
    windows_parameter,
)
from devstack.aws.patches import DeprecatableAmi

DISCOVERY_TAG = "karpenter.sh/discovery"
KUBERNETES_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
# Release each alias resolves to: `latest` points at the newest; the pinned one stays resolvable.
LATEST_RELEASES = {"AL2023": "v20250715", "AL2": "v20250715", "Bottlerocket": "v1.42.0"}
PINNED_RELEASES = {"AL2023": "v20240807", "AL2": "v20240807", "Bottlerocket": "v1.20.0"}
# The release date in the names of the Windows AMIs the `latest` parameters point at.
WINDOWS_RELEASE_DATE = dt.datetime(2025, 7, 15, tzinfo=dt.UTC)
EKS_AMI_OWNER = "602401143452"
VPC_CIDR = "10.0.0.0/16"
SUBNET_CIDRS = ("10.0.0.0/20", "10.0.16.0/20", "10.0.32.0/20")
SERVICE_CIDR = "10.100.0.0/16"
CLUSTER_VERSION = "1.32"
# Team-built x86_64 AMIs: (name, CreationDate, DeprecationTime or None). The newer one is deprecated.
CUSTOM_AMI_TAG = ("nodeflow.dev/ami", "team")
CUSTOM_AMIS = (
    ("nodeflow-team-al2023-x86_64-v20250101", dt.datetime(2025, 1, 1, tzinfo=dt.UTC), None),
    ("nodeflow-team-al2023-x86_64-v20250601", dt.datetime(2025, 6, 1, tzinfo=dt.UTC), "2025-07-01T00:00:00.000Z"),
)


def zones(region: str) -> list[str]:
    return [f"{region}{suffix}" for suffix in "abc"]


def _tags(cluster: str, name: str) -> list[dict[str, str]]:
    return [{"Key": DISCOVERY_TAG, "Value": cluster}, {"Key": "Name", "Value": name}]


def _discovery(cluster: str) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{DISCOVERY_TAG}", "Values": [cluster]}]


def seed_network(ec2: Any, cluster: str, region: str) -> dict[str, Any]:
    """VPC, subnets and security group; returns their ids."""
    vpcs = ec2.describe_vpcs(Filters=_discovery(cluster))["Vpcs"]
    if vpcs:
        vpc_id = vpcs[0]["VpcId"]
    else:
        spec = [{"ResourceType": "vpc", "Tags": _tags(cluster, f"{cluster}-vpc")}]
        vpc_id = ec2.create_vpc(CidrBlock=VPC_CIDR, TagSpecifications=spec)["Vpc"]["VpcId"]
    existing = {
        s["AvailabilityZone"]: s["SubnetId"] for s in ec2.describe_subnets(Filters=_discovery(cluster))["Subnets"]
    }
    subnets = []
    for zone, cidr in zip(zones(region), SUBNET_CIDRS, strict=True):
        if zone not in existing:
            spec = [{"ResourceType": "subnet", "Tags": _tags(cluster, f"{cluster}-private-{zone}")}]
            created = ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone, TagSpecifications=spec)
            existing[zone] = created["Subnet"]["SubnetId"]
        subnets.append(existing[zone])
    groups = ec2.describe_security_groups(Filters=_discovery(cluster))["SecurityGroups"]
    if groups:
        group_id = groups[0]["GroupId"]
    else:
        spec = [{"ResourceType": "security-group", "Tags": _tags(cluster, f"{cluster}-node")}]
        group_id = ec2.create_security_group(
            GroupName=f"{cluster}-node", Description=f"nodes of {cluster}", VpcId=vpc_id, TagSpecifications=spec
        )["GroupId"]
    return {"vpc": vpc_id, "subnets": subnets, "securityGroup": group_id}


def seed_role(iam: Any, cluster: str) -> str:
    return _ensure_role(iam, f"KarpenterNodeRole-{cluster}", "ec2.amazonaws.com")


def _ensure_role(iam: Any, name: str, service: str) -> str:
    try:
        return str(iam.get_role(RoleName=name)["Role"]["Arn"])
    except iam.exceptions.NoSuchEntityException:
        statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
        policy = {"Version": "2012-10-17", "Statement": [statement]}
        return str(iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(policy))["Role"]["Arn"])


def fake_ca_bundle(cluster: str) -> str:
    """Base64 of a PEM-looking certificate block (not a real certificate), as DescribeCluster's
    `certificateAuthority.data`."""
    body = base64.b64encode(hashlib.sha256(cluster.encode()).digest() * 8).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    pem = "\n".join(["-----BEGIN CERTIFICATE-----", *lines, "-----END CERTIFICATE-----", ""])
    return base64.b64encode(pem.encode()).decode()


def seed_cluster(
    eks: Any, iam: Any, cluster: str, region: str, subnets: list[str], endpoint: str | None, ca_pem: bytes | None = None
) -> str:
    """The EKS cluster `cluster`; `endpoint` (None: moto's made-up one) and its CA bundle (`ca_pem`, the PEM
    of the CA that signed the endpoint's serving certificate, as EKS answers it; None: a fake one) are set
    in moto's backend. Returns the endpoint DescribeCluster answers."""
    try:
        eks.describe_cluster(name=cluster)
    except eks.exceptions.ResourceNotFoundException:
        eks.create_cluster(
            name=cluster,
            version=CLUSTER_VERSION,
            roleArn=_ensure_role(iam, f"{cluster}-cluster-role", "eks.amazonaws.com"),
            resourcesVpcConfig={"subnetIds": subnets},
            kubernetesNetworkConfig={"serviceIpv4Cidr": SERVICE_CIDR, "ipFamily": "ipv4"},
        )
    model = eks_backends[DEFAULT_ACCOUNT_ID][region].clusters[cluster]
    if endpoint is not None:
        model.endpoint = endpoint
    bundle = base64.b64encode(ca_pem).decode() if ca_pem is not None else fake_ca_bundle(cluster)
    model.certificate_authority = {"data": bundle}
    return str(model.endpoint)


def _ami_name(family: str, k8s: str, arch: str, variant: str, release: str) -> str:
    if family == "Bottlerocket":
        flavour = f"aws-k8s-{k8s}" + ("-nvidia" if variant == "nvidia" else "")
        return f"bottlerocket-{flavour}-{arch}-{release}"
    if family == "AL2023":
        return f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{release}"
    kind = {"standard": "node", "nvidia": "gpu-node"}[variant]
    prefix = "amazon-eks-arm64-node" if arch == "arm64" else f"amazon-eks-{kind}"
    return f"{prefix}-{k8s}-{release}"


def ami_id_of(name: str) -> str:
    """The id the seed gives the AMI named `name`: derived from the name, so it is the same in every stack."""
    return "ami-" + hashlib.sha256(name.encode()).hexdigest()[:17]


def _ensure_ami(
    backend: Any, region: str, name: str, arch: str, created: dt.datetime, platform: str | None = None
) -> str:
    """An Amazon-owned public AMI named `name` (id derived from the name); `platform="windows"` makes it a
    Windows AMI (root on /dev/sda1). Returns its id."""
    ami_id = ami_id_of(name)
    if ami_id not in backend.amis:
        backend.amis[ami_id] = Ami(
            backend,
            ami_id,
            name=name,
            description=f"EKS-optimized image {name}",
            owner_id=EKS_AMI_OWNER,
            owner_alias="amazon",
            public=True,
            virtualization_type="hvm",
            architecture=arch,
            creation_date=created,
            platform=platform,
            hypervisor="xen",
            root_device_type="ebs",
            root_device_name="/dev/sda1" if platform == "windows" else "/dev/xvda",
            region_name=f"{region}a",
        )
    return ami_id


def _ensure_parameter(parameters: Any, name: str, value: str) -> None:
    if parameters.get(name):
        return
    parameters[name].append(
        Parameter(  # type: ignore[abstract]
            account_id=DEFAULT_ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=dt.datetime.now(dt.UTC),
            version=1,
            data_type="aws:ec2:image",
        )
    )


def seed_amis(region: str) -> int:
    """AMIs and SSM alias parameters for every family, Kubernetes version and release; returns the count."""
    backend = ec2_backends[DEFAULT_ACCOUNT_ID][region]
    parameters = ssm_backends[DEFAULT_ACCOUNT_ID][region]._parameters
    count = seed_windows_amis(region)
    for family in ALIAS_FAMILIES.values():
        if is_windows(family):
            continue
        alias = next(a for a, f in ALIAS_FAMILIES.items() if f == family)
        releases = [
            ("latest", LATEST_RELEASES[family]),
            (LATEST_RELEASES[family], LATEST_RELEASES[family]),
            (PINNED_RELEASES[family], PINNED_RELEASES[family]),
        ]
        for k8s in KUBERNETES_VERSIONS:
            for version, release in releases:
                created = (
                    dt.datetime(2025, 7, 15, tzinfo=dt.UTC)
                    if release == LATEST_RELEASES[family]
                    else (dt.datetime(2024, 8, 7, tzinfo=dt.UTC))
                )
                seeded: set[str] = set()
                for param in alias_parameters(f"{alias}@{version}", k8s):
                    if param.name in seeded:
                        continue  # one AMI serving several variants (AL2's GPU AMI serves Neuron too)
                    seeded.add(param.name)
                    name = _ami_name(family, k8s, param.arch, param.variant, release)
                    _ensure_parameter(parameters, param.name, _ensure_ami(backend, region, name, param.arch, created))
                    count += 1
    return count


def windows_ami_name(family: str, k8s: str) -> str:
    """The name of the EKS-optimized Windows Server Core AMI `latest` points at, in the form Amazon names
    them: `Windows_Server-2022-English-Core-EKS_Optimized-1.32-2025.07.15`."""
    release = WINDOWS_RELEASES[family]
    return f"Windows_Server-{release}-English-Core-EKS_Optimized-{k8s}-{WINDOWS_RELEASE_DATE:%Y.%m.%d}"


def seed_windows_amis(region: str) -> int:
    """A Windows AMI (x86_64, Platform windows) and its `ami-windows-latest` parameter for every Windows
    family and Kubernetes version; returns the count of parameters."""
    backend = ec2_backends[DEFAULT_ACCOUNT_ID][region]
    parameters = ssm_backends[DEFAULT_ACCOUNT_ID][region]._parameters
    count = 0
    for family in WINDOWS_RELEASES:
        for k8s in KUBERNETES_VERSIONS:
            name = windows_ami_name(family, k8s)
            image_id = _ensure_ami(backend, region, name, "x86_64", WINDOWS_RELEASE_DATE, platform="windows")
            _ensure_parameter(parameters, windows_parameter(family, k8s), image_id)
            count += 1
    return count


def seed_custom_amis(region: str) -> list[str]:
    """The team-built AMIs of `CUSTOM_AMIS`, owned by the account; returns their ids in that order."""
    backend = ec2_backends[DEFAULT_ACCOUNT_ID][region]
    ids = []
    for name, created, deprecation in CUSTOM_AMIS:
        ami_id = ami_id_of(name)
        if ami_id not in backend.amis:
            backend.amis[ami_id] = DeprecatableAmi(
                backend,
                ami_id,
                name=name,
                description=f"team-built image {name}",
                virtualization_type="hvm",
                architecture="x86_64",
                creation_date=created,
                hypervisor="xen",
                root_device_type="ebs",
                root_device_name="/dev/xvda",
                region_name=f"{region}a",
                tags={CUSTOM_AMI_TAG[0]: CUSTOM_AMI_TAG[1]},
                deprecation_time=deprecation,
            )
        ids.append(ami_id)
    return ids


def seed(
    url: str, cluster: str, region: str, cluster_endpoint: str | None = None, cluster_ca: bytes | None = None
) -> dict[str, Any]:
    """Seed everything; safe to call again (after a moto reset it recreates what was lost).
    `cluster_endpoint`: what DescribeCluster answers as the cluster's endpoint (None: moto's own);
    `cluster_ca`: the PEM of its CA, answered as `certificateAuthority.data` (None: a fake one)."""
    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": region}
    ec2 = boto3.client("ec2", endpoint_url=url, **keys)
    iam = boto3.client("iam", endpoint_url=url, **keys)
    eks = boto3.client("eks", endpoint_url=url, **keys)
    network = seed_network(ec2, cluster, region)
    role = seed_role(iam, cluster)
    endpoint = seed_cluster(eks, iam, cluster, region, network["subnets"], cluster_endpoint, cluster_ca)
    return {
        **network,
        "role": role,
        "clusterEndpoint": endpoint,
        "amiParameters": seed_amis(region),
        "customAmis": seed_custom_amis(region),
    }
