"""In-memory EC2, SSM and IAM clients with just the calls node class resolution makes, so unit tests run
the real `AWSCloudProvider.resolve_node_class` (aliases, selector terms, instance profiles) without a
server. Errors are botocore `ClientError`s with AWS's codes, as a real client raises them."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from apis.ec2nodeclass import EC2NodeClass
from cloudprovider.aws.nodeclass.amis import alias_parameters
from cloudprovider.aws.pricing.tables import PriceTable
from cloudprovider.aws.provider import AWSCloudProvider
from cloudprovider.fake import ZONES, FakeCloudProvider
from cloudprovider.types import ResolvedNodeClass

CLUSTER = "test-cluster"
KUBERNETES_VERSION = "1.32"
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}
ROLE = f"KarpenterNodeRole-{CLUSTER}"


def _error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"{code} (stub)"}}, operation)


def _matches(tags: list[dict[str, str]], name: str, filters: list[dict[str, Any]]) -> bool:
    have = {t["Key"]: t["Value"] for t in tags}
    for f in filters:
        values = f["Values"]
        if f["Name"] == "tag-key" and not any(k in have for k in values):
            return False
        if f["Name"].startswith("tag:") and have.get(f["Name"][4:]) not in values:
            return False
        if f["Name"] == "group-name" and name not in values:
            return False
    return True


class StubEC2:
    def __init__(self) -> None:
        tags = [{"Key": k, "Value": v} for k, v in DISCOVERY.items()]
        self.subnets = [
            {"SubnetId": f"subnet-{zone[-1]}", "AvailabilityZone": zone, "AvailableIpAddressCount": 1000, "Tags": tags}
            for zone in ZONES
        ]
        self.groups = [{"GroupId": "sg-stub", "GroupName": "nodes", "Tags": tags}]
        self.images: dict[str, dict[str, Any]] = {}

    def describe_subnets(self, **kw: Any) -> dict[str, Any]:
        ids, filters = kw.get("SubnetIds"), kw.get("Filters", [])
        found = [s for s in self.subnets if (s["SubnetId"] in ids if ids else _matches(s["Tags"], "", filters))]
        if ids and not found:
            raise _error("InvalidSubnetID.NotFound", "DescribeSubnets")
        return {"Subnets": found}

    def describe_security_groups(self, **kw: Any) -> dict[str, Any]:
        ids, filters = kw.get("GroupIds"), kw.get("Filters", [])
        found = [
            g for g in self.groups if (g["GroupId"] in ids if ids else _matches(g["Tags"], g["GroupName"], filters))
        ]
        return {"SecurityGroups": found}

    def describe_images(self, **kw: Any) -> dict[str, Any]:
        return {"Images": [self.images[i] for i in kw.get("ImageIds", []) if i in self.images]}

    # The launch calls, sent only with DryRun by a node class's validation: the caller may make them.
    def create_fleet(self, **kw: Any) -> dict[str, Any]:
        raise _error("DryRunOperation", "CreateFleet")

    def create_launch_template(self, **kw: Any) -> dict[str, Any]:
        raise _error("DryRunOperation", "CreateLaunchTemplate")

    def run_instances(self, **kw: Any) -> dict[str, Any]:
        raise _error("DryRunOperation", "RunInstances")


class StubSSM:
    def __init__(self, ec2: StubEC2) -> None:
        """Publishes an AMI for every parameter the al2023, al2, bottlerocket, windows2019 and windows2022
        aliases read (windows2025 needs Kubernetes 1.35)."""
        self.parameters: dict[str, str] = {}
        for family in ("al2023", "al2", "bottlerocket", "windows2019", "windows2022"):
            for n, param in enumerate(alias_parameters(f"{family}@latest", KUBERNETES_VERSION)):
                if param.name in self.parameters:
                    continue  # one AMI serving several variants
                image_id = f"ami-{family}{n}"
                self.parameters[param.name] = image_id
                ec2.images[image_id] = {
                    "ImageId": image_id,
                    "Name": f"{family}-{param.arch}-{param.variant}",
                    "Architecture": param.arch,
                    "State": "available",
                    "CreationDate": "2025-01-01T00:00:00Z",
                }

    def get_parameter(self, **kw: Any) -> dict[str, Any]:
        if kw["Name"] not in self.parameters:
            raise _error("ParameterNotFound", "GetParameter")
        return {"Parameter": {"Value": self.parameters[kw["Name"]]}}


class StubIAM:
    def __init__(self) -> None:
        self.roles = {ROLE}
        self.profiles: dict[str, list[str]] = {}

    def get_instance_profile(self, **kw: Any) -> dict[str, Any]:
        name = kw["InstanceProfileName"]
        if name not in self.profiles:
            raise _error("NoSuchEntity", "GetInstanceProfile")
        return {
            "InstanceProfile": {"InstanceProfileName": name, "Roles": [{"RoleName": r} for r in self.profiles[name]]}
        }

    def create_instance_profile(self, **kw: Any) -> dict[str, Any]:
        self.profiles.setdefault(kw["InstanceProfileName"], [])
        return {}

    def add_role_to_instance_profile(self, **kw: Any) -> dict[str, Any]:
        if kw["RoleName"] not in self.roles:
            raise _error("NoSuchEntity", "AddRoleToInstanceProfile")
        self.profiles[kw["InstanceProfileName"]].append(kw["RoleName"])
        return {}


class StubbedCloud(FakeCloudProvider):
    """The fake cloud (catalog, launches) with the real AWS node class resolution over the stubs."""

    def __init__(self) -> None:
        super().__init__(cluster_name=CLUSTER)
        self.ec2 = StubEC2()
        self.aws = AWSCloudProvider(
            self.ec2,  # type: ignore[arg-type]
            StubSSM(self.ec2),  # type: ignore[arg-type]
            StubIAM(),  # type: ignore[arg-type]
            region="us-west-2",
            cluster_name=CLUSTER,
            kubernetes_version=KUBERNETES_VERSION,
            prices=PriceTable(region="us-west-2", as_of="", prices={}),
        )

    def resolve_node_class(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        self._raise_injected("resolve_node_class")
        return self.aws.resolve_node_class(node_class)
