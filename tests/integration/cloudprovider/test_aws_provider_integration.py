"""AWSCloudProvider against the local stack's moto server over HTTP, with real boto3.

One server per module; each test uses fresh claim names and starts with no faults and an empty
unavailable-offerings cache.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID as MOTO_ACCOUNT
from moto.ec2.models import ec2_backends

from activities.provisioning.nodeclass_status import reservation_status
from apis.ec2nodeclass import EC2NodeClass, ResolvedCapacityReservation
from cloudprovider.aws.factory import new_aws_cloud_provider
from cloudprovider.aws.interruption.instance_status import scheduled_changes
from cloudprovider.aws.pricing.tables import load_price_table
from cloudprovider.aws.provider import AWSCloudProvider
from cloudprovider.errors import (
    CloudProviderError,
    InstanceNotFoundError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
    ThrottledError,
)
from cloudprovider.types import LaunchRequest
from devstack.aws.capacity_reservations import add_capacity_block
from devstack.aws.faults import FaultClient
from devstack.aws.response_cache import default_cache_dir
from devstack.aws.seed import CUSTOM_AMI_TAG, CUSTOM_AMIS, windows_ami_name
from devstack.aws.server import MotoServer
from tests.userdata_parsing import windows_bootstrap

CLUSTER = "it-cluster"
REGION = "us-west-2"
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
_names = itertools.count(1)


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoServer]:
    with MotoServer(cluster_name=CLUSTER, region=REGION, response_cache=default_cache_dir()) as server:
        yield server


LAUNCH_FAILURES: list[tuple[str, str, str, str]] = []  # what the module's provider reports (zone, id, type, code)


@pytest.fixture(scope="module")
def provider(aws: MotoServer) -> AWSCloudProvider:
    cp = new_aws_cloud_provider(
        REGION,
        aws.url,
        cluster_name=CLUSTER,
        credentials=("testing", "testing"),
        max_attempts=2,
        observe_launch_failure=lambda *failure: LAUNCH_FAILURES.append(failure),
    )
    cp.instance_types(None)  # load the catalog once (moto's first EC2 call costs seconds)
    return cp


@pytest.fixture(autouse=True)
def clean(aws: MotoServer, provider: AWSCloudProvider) -> Iterator[FaultClient]:
    faults = aws.fault_client()
    faults.clear()
    provider.unavailable.clear()
    LAUNCH_FAILURES.clear()
    yield faults
    faults.clear()


@pytest.fixture(scope="module")
def ec2(aws: MotoServer):  # type: ignore[no-untyped-def]
    return boto3.client(
        "ec2", endpoint_url=aws.url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
    )


def make_node_class(alias: str = "al2023@latest", discovery: str = CLUSTER, **spec: object) -> EC2NodeClass:
    selector = [{"tags": {"karpenter.sh/discovery": discovery}}]
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "role": f"KarpenterNodeRole-{CLUSTER}",
                "amiSelectorTerms": [{"alias": alias}],
                "subnetSelectorTerms": selector,
                "securityGroupSelectorTerms": selector,
                **spec,
            },
        }
    )


def make_request(types: list[str], capacity_types: list[str] | None = None, **kw: object) -> LaunchRequest:
    n = next(_names)
    return LaunchRequest.model_validate(
        {
            "node_claim_name": f"default-{n:04d}",
            "node_pool": "default",
            "client_token": f"uid-{n:04d}",
            "node_class": make_node_class(),
            "instance_types": types,
            "capacity_types": capacity_types or ["on-demand"],
            **kw,
        }
    )


def test_seed_is_discoverable_by_tags(ec2) -> None:  # type: ignore[no-untyped-def]
    tag = [{"Name": "tag:karpenter.sh/discovery", "Values": [CLUSTER]}]
    subnets = ec2.describe_subnets(Filters=tag)["Subnets"]
    assert sorted(s["AvailabilityZone"] for s in subnets) == ZONES
    assert all(s["AvailableIpAddressCount"] >= 1000 for s in subnets)
    assert len(ec2.describe_security_groups(Filters=tag)["SecurityGroups"]) == 1


def test_node_class_resolves_alias_to_an_ami_per_architecture(provider: AWSCloudProvider) -> None:
    resolved = provider.resolve_node_class(make_node_class())
    assert [s["zone"] for s in resolved.subnets] == ZONES
    assert len(resolved.security_groups) == 1
    standard = {a["arch"]: a["name"] for a in resolved.amis if a["variant"] == "standard"}
    assert standard == {
        "arm64": "amazon-eks-node-al2023-arm64-standard-1.32-v20250715",
        "x86_64": "amazon-eks-node-al2023-x86_64-standard-1.32-v20250715",
    }
    neuron = {a["name"] for a in resolved.amis if a["variant"] == "neuron"}
    assert neuron == {"amazon-eks-node-al2023-x86_64-neuron-1.32-v20250715"}
    pinned = provider.resolve_node_class(make_node_class("al2@v20240807"))
    assert {a["name"] for a in pinned.amis} >= {"amazon-eks-node-1.32-v20240807"}
    gpu = {(a["name"], a["variant"]) for a in pinned.amis if a["variant"] != "standard"}
    assert gpu == {("amazon-eks-gpu-node-1.32-v20240807", "nvidia"), ("amazon-eks-gpu-node-1.32-v20240807", "neuron")}
    assert provider.resolve_node_class(make_node_class("bottlerocket@latest")).amis


def test_a_node_class_without_ami_terms_runs_its_familys_latest_amis(provider: AWSCloudProvider) -> None:
    family_only = make_node_class(amiFamily="AL2023", amiSelectorTerms=[])
    family_only.metadata.name = "family-only"
    resolved = provider.resolve_node_class(family_only)
    latest = provider.resolve_node_class(make_node_class("al2023@latest"))
    assert resolved.amis == latest.amis
    custom = make_node_class(amiFamily="Custom", amiSelectorTerms=[])
    custom.metadata.name = "custom-without-terms"
    with pytest.raises(NodeClassNotReadyError, match="amiSelectorTerms is empty and amiFamily Custom"):
        provider.resolve_node_class(custom)


def test_node_class_with_no_matching_subnet_is_not_ready(provider: AWSCloudProvider) -> None:
    with pytest.raises(NodeClassNotReadyError, match="subnetSelectorTerms"):
        provider.resolve_node_class(make_node_class(discovery="nobody"))


def test_each_part_of_a_node_class_says_whether_it_resolved(provider: AWSCloudProvider) -> None:
    broken = make_node_class(
        securityGroupSelectorTerms=[{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "nobody"}}],
        amiSelectorTerms=[{"name": "no-such-ami"}],
        amiFamily="AL2023",
    )
    with pytest.raises(NodeClassNotReadyError, match="subnetSelectorTerms") as raised:
        provider.resolve_node_class(broken)
    parts = {condition: (status, reason) for condition, (status, reason, _) in raised.value.conditions.items()}
    assert parts == {
        "SubnetsReady": ("False", "SubnetsNotFound"),
        "SecurityGroupsReady": ("True", "SecurityGroupsReady"),
        "AMIsReady": ("False", "AMINotFound"),
        "InstanceProfileReady": ("True", "InstanceProfileReady"),
        "ValidationSucceeded": ("False", "DependenciesNotReady"),
    }
    resolved = provider.resolve_node_class(make_node_class())
    assert {status for status, _, _ in resolved.conditions.values()} == {"True"} and len(resolved.conditions) == 5


def test_create_launches_the_cheapest_override_with_the_claim_tags(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    request = make_request(["m5.large", "c5.large", "t3.large"], tags={"team": "a"})
    instance = provider.create(request)
    prices = load_price_table()
    cheapest = min(request.instance_types, key=lambda t: prices.on_demand(t) or 0)
    assert (instance.instance_type, instance.zone, instance.capacity_type) == (cheapest, "us-west-2a", "on-demand")
    assert instance.tags["karpenter.sh/nodeclaim"] == request.node_claim_name
    assert instance.tags["karpenter.sh/nodepool"] == "default"
    assert instance.tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
    assert instance.tags["eks:eks-cluster-name"] == CLUSTER
    assert instance.tags["karpenter.k8s.aws/ec2nodeclass"] == "default"
    assert instance.tags["team"] == "a"
    assert instance.provider_id == f"aws:///us-west-2a/{instance.id}"
    templates = [
        t
        for t in ec2.describe_launch_templates()["LaunchTemplates"]
        if t["LaunchTemplateName"].startswith("karpenter.k8s.aws/")
    ]
    data = ec2.describe_launch_template_versions(LaunchTemplateId=templates[0]["LaunchTemplateId"])[
        "LaunchTemplateVersions"
    ][0]["LaunchTemplateData"]
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "kind: NodeConfig" in user_data and "karpenter.sh/unregistered:NoExecute" in user_data
    profile = data["IamInstanceProfile"]["Name"]
    iam = boto3.client(
        "iam", endpoint_url=ec2.meta.endpoint_url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
    )
    roles = iam.get_instance_profile(InstanceProfileName=profile)["InstanceProfile"]["Roles"]
    assert [r["RoleName"] for r in roles] == [f"KarpenterNodeRole-{CLUSTER}"]


def test_a_changed_spec_role_replaces_the_role_in_the_node_class_profile(
    aws: MotoServer, provider: AWSCloudProvider
) -> None:
    from cloudprovider.aws.nodeclass.resolve import generated_profile_name

    iam = boto3.client(
        "iam", endpoint_url=aws.url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
    )
    trust = '{"Version": "2012-10-17", "Statement": []}'
    iam.create_role(RoleName="NewNodeRole", AssumeRolePolicyDocument=trust)
    first = make_node_class()
    first.metadata.name = "role-change"
    provider.resolve_node_class(first)
    profile = generated_profile_name(CLUSTER, REGION, "role-change")

    def roles() -> list[str]:
        return [
            r["RoleName"] for r in iam.get_instance_profile(InstanceProfileName=profile)["InstanceProfile"]["Roles"]
        ]

    assert roles() == [f"KarpenterNodeRole-{CLUSTER}"]
    changed = first.model_copy(deep=True)
    changed.spec.role = "NewNodeRole"
    provider.resolve_node_class(changed)
    assert roles() == ["NewNodeRole"]


def test_a_launch_prefers_a_general_purpose_type_to_a_cheaper_accelerated_one_and_takes_it_when_it_is_all(
    provider: AWSCloudProvider,
) -> None:
    # inf1.xlarge (Inferentia, $0.228 an hour on demand) is cheaper than c5.2xlarge ($0.34)
    assert provider.create(make_request(["inf1.xlarge", "c5.2xlarge"])).instance_type == "c5.2xlarge"
    assert provider.create(make_request(["inf1.xlarge"])).instance_type == "inf1.xlarge"


def test_create_prefers_the_cheapest_spot_offering_when_spot_is_allowed(provider: AWSCloudProvider) -> None:
    request = make_request(["m5.large", "c5.large"], ["spot", "on-demand"])
    catalog = {it.name: it for it in provider.instance_types(request.node_class)}
    expected = min(
        (o.price, name, o.zone)
        for name in request.instance_types
        for o in catalog[name].offerings
        if o.capacity_type == "spot"
    )
    instance = provider.create(request)
    assert (instance.capacity_type, instance.instance_type, instance.zone) == ("spot", expected[1], expected[2])


def test_create_twice_for_the_same_claim_adopts_the_instance(provider: AWSCloudProvider) -> None:
    request = make_request(["m5.large"])
    first = provider.create(request)
    assert provider.create(request).id == first.id
    found = provider.find_by_node_claim(request.node_claim_name)
    assert found is not None and found.id == first.id


def test_create_fleet_client_token_is_idempotent(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    request = make_request(["m5.large"])
    first = provider.create(request)
    again = ec2.create_fleet(
        Type="instant",
        ClientToken=request.client_token,
        LaunchTemplateConfigs=[{"LaunchTemplateSpecification": {"LaunchTemplateName": "any", "Version": "$Latest"}}],
        TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"},
    )
    assert [i for g in again["Instances"] for i in g["InstanceIds"]] == [first.id]


def test_insufficient_capacity_on_some_offerings_launches_another(
    provider: AWSCloudProvider, clean: FaultClient
) -> None:
    clean.insufficient_capacity("t3.large", "us-west-2a", "on-demand")
    instance = provider.create(make_request(["t3.large", "m5.large"]))
    assert (instance.instance_type, instance.zone) == ("t3.large", "us-west-2b")
    for zone in ZONES:
        clean.insufficient_capacity("t3.large", zone)
    instance = provider.create(make_request(["t3.large", "m5.large"]))
    assert instance.instance_type == "m5.large"


def test_each_offering_a_fleet_refuses_is_reported_with_its_zone_id_even_when_another_launches(
    provider: AWSCloudProvider, clean: FaultClient
) -> None:
    clean.insufficient_capacity("t3.large", "us-west-2a", "on-demand")
    instance = provider.create(make_request(["t3.large"]))
    assert instance.zone == "us-west-2b"
    [(zone, zone_id, capacity_type, reason)] = LAUNCH_FAILURES
    assert (zone, capacity_type, reason) == ("us-west-2a", "on-demand", "InsufficientInstanceCapacity")
    assert zone_id and zone_id.startswith("usw2-az")  # Karpenter's zone_id label: the account-independent id


def test_insufficient_capacity_everywhere_raises_and_marks_offerings_unavailable(
    provider: AWSCloudProvider, clean: FaultClient
) -> None:
    for zone in ZONES:
        clean.insufficient_capacity("c5.large", zone)
    request = make_request(["c5.large"])
    with pytest.raises(InsufficientCapacityError) as raised:
        provider.create(request)
    refused = {(o.instance_type, o.zone, o.capacity_type) for o in raised.value.offerings}
    assert refused == {("c5.large", zone, "on-demand") for zone in ZONES}
    c5 = next(it for it in provider.instance_types(request.node_class) if it.name == "c5.large")
    assert {(o.zone, o.capacity_type): o.available for o in c5.offerings} == {
        **{(z, "on-demand"): False for z in ZONES},
        **{(z, "spot"): True for z in ZONES},
    }
    with pytest.raises(InsufficientCapacityError) as raised:  # nothing left to try: no CreateFleet call at all
        provider.create(make_request(["c5.large"]))
    assert {(o.instance_type, o.zone) for o in raised.value.offerings} == {("c5.large", zone) for zone in ZONES}


def test_request_limit_exceeded_burst_raises_throttled(provider: AWSCloudProvider, clean: FaultClient) -> None:
    clean.throttle("CreateFleet", 2)  # more than the SDK's 2 attempts
    with pytest.raises(ThrottledError, match="RequestLimitExceeded"):
        provider.create(make_request(["m5.large"]))
    assert clean.get()["throttle"] == {}
    clean.throttle("CreateFleet", 1)  # one throttle is absorbed by the SDK's retry
    assert provider.create(make_request(["m5.large"])).instance_type == "m5.large"


def test_server_errors_are_retryable(provider: AWSCloudProvider, clean: FaultClient) -> None:
    clean.server_error("DescribeInstances", 2)
    with pytest.raises(CloudProviderError) as raised:
        provider.list()
    assert raised.value.retryable and not isinstance(raised.value, InstanceNotFoundError)


def test_delete_until_instance_not_found(provider: AWSCloudProvider) -> None:
    instance = provider.create(make_request(["m5.large"]))
    provider.delete(instance.id)
    with pytest.raises(InstanceNotFoundError):
        for _ in range(5):  # moto terminates at once; AWS may take a few calls
            provider.delete(instance.id)
    with pytest.raises(InstanceNotFoundError):
        provider.get(instance.id)
    with pytest.raises(InstanceNotFoundError):
        provider.delete("i-0123456789abcdef0")
    assert provider.find_by_node_claim(instance.tags["karpenter.sh/nodeclaim"]) is None


def test_list_shows_only_this_clusters_live_instances(provider: AWSCloudProvider, aws: MotoServer, ec2) -> None:  # type: ignore[no-untyped-def]
    mine = provider.create(make_request(["m5.large"]))
    gone = provider.create(make_request(["m5.large"]))
    provider.delete(gone.id)
    other = ec2.run_instances(
        ImageId="ami-12c6146b",
        MinCount=1,
        MaxCount=1,
        InstanceType="m5.large",
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "kubernetes.io/cluster/other", "Value": "owned"}]}
        ],
    )["Instances"][0]["InstanceId"]
    listed = [i.id for i in provider.list()]
    assert mine.id in listed and gone.id not in listed and other not in listed
    assert listed == sorted(listed)


def test_instance_statuses_cover_this_clusters_running_instances(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    mine = provider.create(make_request(["m5.large"]))
    other = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="m5.large")
    statuses = provider.instance_statuses()
    ids = [s["InstanceId"] for s in statuses]
    assert mine.id in ids and other["Instances"][0]["InstanceId"] not in ids
    assert ids == sorted(ids)
    # moto reports every running instance's checks as ok and schedules no event: nothing to act on
    assert scheduled_changes(statuses) == []


def test_a_node_class_with_a_public_ip_choice_cpu_options_and_a_context_launches(
    provider: AWSCloudProvider, ec2
) -> None:  # type: ignore[no-untyped-def]
    node_class = make_node_class(
        associatePublicIPAddress=False, cpuOptions={"nestedVirtualization": "enabled"}, context="ctx-1"
    )
    request = make_request(["m5.large"], node_class=node_class)
    instance = provider.create(request)
    assert instance.instance_type == "m5.large"
    datas = [
        ec2.describe_launch_template_versions(LaunchTemplateId=t["LaunchTemplateId"])["LaunchTemplateVersions"][0][
            "LaunchTemplateData"
        ]
        for t in ec2.describe_launch_templates()["LaunchTemplates"]
        if t["LaunchTemplateName"].startswith("karpenter.k8s.aws/")
    ]
    [data] = [d for d in datas if "NetworkInterfaces" in d]
    (interface,) = data["NetworkInterfaces"]
    assert interface["AssociatePublicIpAddress"] is False
    assert interface["Groups"] and "SecurityGroupIds" not in data


def _custom_ami_ids(ec2) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """name -> id of the seeded team-built AMIs (deprecated ones included)."""
    key, value = CUSTOM_AMI_TAG
    images = ec2.describe_images(IncludeDeprecated=True, Filters=[{"Name": f"tag:{key}", "Values": [value]}])
    return {i["Name"]: i["ImageId"] for i in images["Images"]}


def test_describe_images_hides_a_deprecated_ami_unless_asked_or_named(ec2) -> None:  # type: ignore[no-untyped-def]
    (current, _, _), (deprecated, _, deprecation) = CUSTOM_AMIS
    ids = _custom_ami_ids(ec2)
    assert set(ids) == {current, deprecated}
    name_filter = [{"Name": "name", "Values": ["nodeflow-team-al2023-x86_64-*"]}]
    assert [i["Name"] for i in ec2.describe_images(Filters=name_filter)["Images"]] == [current]
    named = ec2.describe_images(ImageIds=[ids[deprecated]])["Images"]
    assert [(i["ImageId"], i["DeprecationTime"]) for i in named] == [(ids[deprecated], deprecation)]


@pytest.mark.parametrize(
    "term",
    [{"name": "nodeflow-team-al2023-x86_64-*"}, {"tags": {CUSTOM_AMI_TAG[0]: CUSTOM_AMI_TAG[1]}}],
    ids=["name", "tags"],
)
def test_selection_by_name_or_tags_skips_the_newer_deprecated_ami(
    provider: AWSCloudProvider,
    ec2,
    term: dict[str, object],  # type: ignore[no-untyped-def]
) -> None:
    (current, _, _), _ = CUSTOM_AMIS
    node_class = make_node_class(amiFamily="AL2023", amiSelectorTerms=[term])
    resolved = provider.resolve_node_class(node_class)
    assert [(a["id"], a.get("deprecated")) for a in resolved.amis] == [(_custom_ami_ids(ec2)[current], None)]
    instance = provider.create(make_request(["m5.large"], node_class=node_class))
    assert instance.image_id == _custom_ami_ids(ec2)[current]


def test_a_deprecated_ami_pinned_by_id_is_chosen_and_launched(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    _, (deprecated, _, _) = CUSTOM_AMIS
    pinned = _custom_ami_ids(ec2)[deprecated]
    node_class = make_node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": pinned}])
    resolved = provider.resolve_node_class(node_class)
    assert [(a["id"], a.get("deprecated")) for a in resolved.amis] == [(pinned, "true")]
    instance = provider.create(make_request(["m5.large"], node_class=node_class))
    assert instance.image_id == pinned


def test_a_windows2022_node_class_resolves_to_the_seeded_ami_and_launches_with_powershell(
    provider: AWSCloudProvider,
    ec2,  # type: ignore[no-untyped-def]
) -> None:
    node_class = make_node_class("windows2022@latest")
    [ami] = provider.resolve_node_class(node_class).amis
    assert ami["name"] == windows_ami_name("Windows2022", "1.32")
    assert (ami["arch"], ami["variant"]) == ("x86_64", "standard")
    assert ec2.describe_images(ImageIds=[ami["id"]])["Images"][0]["Platform"] == "windows"

    request = make_request(["m5.large"], node_class=node_class, labels={"kubernetes.io/os": "windows"})
    instance = provider.create(request)

    assert instance.image_id == ami["id"]
    described = ec2.describe_instances(InstanceIds=[instance.id])["Reservations"][0]["Instances"][0]
    assert described["Platform"] == "windows"
    [data] = [
        v["LaunchTemplateData"]
        for t in ec2.describe_launch_templates()["LaunchTemplates"]
        if t["LaunchTemplateName"].startswith("karpenter.k8s.aws/")
        for v in ec2.describe_launch_template_versions(LaunchTemplateId=t["LaunchTemplateId"])["LaunchTemplateVersions"]
        if v["LaunchTemplateData"].get("ImageId") == ami["id"]
    ]
    before, args = windows_bootstrap(base64.b64decode(data["UserData"]).decode())
    assert before == ""
    assert args["EKSClusterName"] == CLUSTER and "APIServerEndpoint" in args
    assert args.get("DNSClusterIP", "10.100.0.10") == "10.100.0.10"  # CA and DNS IP: when the provider knows them
    assert "kubernetes.io/os=windows" in args["KubeletExtraArgs"]
    assert "karpenter.sh/unregistered:NoExecute" in args["KubeletExtraArgs"]
    [root] = data["BlockDeviceMappings"]
    assert (root["DeviceName"], root["Ebs"]["VolumeSize"]) == ("/dev/sda1", 50)


# -- EC2NodeClass deletion: what nodeflow made for it goes, the user's instance profile stays --------------


class _NoStarts:
    def start_node_claim(self, claim: object, waiter: str = "") -> None:
        raise AssertionError("no NodeClaim is launched in these tests")


def _node_class_object(name: str, **spec: object) -> dict[str, object]:
    obj = make_node_class(**spec).to_kube()
    return {**obj, "metadata": {"name": name}, "status": {}}


def _templates_of(ec2, node_class: str) -> list[str]:  # type: ignore[no-untyped-def]
    found = ec2.describe_launch_templates(
        Filters=[{"Name": "tag:karpenter.k8s.aws/ec2nodeclass", "Values": [node_class]}]
    )
    return [t["LaunchTemplateName"] for t in found["LaunchTemplates"]]


def _profile(iam, name: str) -> dict[str, object] | None:  # type: ignore[no-untyped-def]
    try:
        return dict(iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"])
    except iam.exceptions.NoSuchEntityException:
        return None


def test_a_deleted_node_class_waits_for_its_claim_then_leaves_no_template_or_own_profile(
    aws: MotoServer,
    provider: AWSCloudProvider,
    ec2,  # type: ignore[no-untyped-def]
    kube,  # type: ignore[no-untyped-def]
) -> None:
    from temporalio.testing import ActivityEnvironment

    from activities.provisioning.models import ProvisionRound
    from activities.provisioning.nodeclass_termination import FINALIZER, WAITING
    from activities.provisioning.provisioner import ProvisioningActivities
    from cloudprovider.aws.nodeclass.resolve import generated_profile_name
    from kube import resources as r
    from kube.errors import NotFoundError
    from kube.events import EventRecorder

    iam = boto3.client(
        "iam", endpoint_url=aws.url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
    )
    role = f"KarpenterNodeRole-{CLUSTER}"
    iam.create_instance_profile(InstanceProfileName="users-own-profile")
    iam.add_role_to_instance_profile(InstanceProfileName="users-own-profile", RoleName=role)
    kube.create(r.EC2NODECLASS, _node_class_object("cleanup-role"))
    kube.create(r.EC2NODECLASS, _node_class_object("cleanup-byo", role=None, instanceProfile="users-own-profile"))
    activities = ProvisioningActivities(kube, provider, EventRecorder(kube), _NoStarts())

    def reconcile() -> None:
        ActivityEnvironment().run(activities.solve, ProvisionRound(run_id="cleanup", round=1))

    provider.create(make_request(["m5.large"]))  # a template of another node class ("default")
    reconcile()
    generated = generated_profile_name(CLUSTER, REGION, "cleanup-role")
    for name in ("cleanup-role", "cleanup-byo"):
        node_class = kube.get(r.EC2NODECLASS, name)
        assert node_class["metadata"]["finalizers"] == [FINALIZER]
        provider.create(make_request(["m5.large"], node_class=EC2NodeClass.model_validate(node_class)))
        assert _templates_of(ec2, name)
    tags = {t["Key"]: t["Value"] for t in _profile(iam, generated)["Tags"]}  # type: ignore[index, union-attr]
    assert tags["karpenter.k8s.aws/ec2nodeclass"] == "cleanup-role"
    claim = kube.create(
        r.NODECLAIM,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "cleanup-role-abc"},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "cleanup-role"},
                "requirements": [],
            },
        },
    )

    kube.delete(r.EC2NODECLASS, "cleanup-role")  # as kubectl delete does
    kube.delete(r.EC2NODECLASS, "cleanup-byo")
    reconcile()
    waiting = kube.get(r.EC2NODECLASS, "cleanup-role")
    ready = next(c for c in waiting["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["reason"], "waiting for 1 NodeClaim" in ready["message"]) == (WAITING, True)
    assert _templates_of(ec2, "cleanup-role") and _profile(iam, generated) is not None
    with pytest.raises(NotFoundError):  # nothing held the other one
        kube.get(r.EC2NODECLASS, "cleanup-byo")
    assert _templates_of(ec2, "cleanup-byo") == []
    assert _profile(iam, "users-own-profile") is not None, "a spec.instanceProfile is the user's: kept"

    kube.delete(r.NODECLAIM, claim["metadata"]["name"])
    reconcile()
    with pytest.raises(NotFoundError):
        kube.get(r.EC2NODECLASS, "cleanup-role")
    assert _templates_of(ec2, "cleanup-role") == []
    assert _profile(iam, generated) is None
    assert _templates_of(ec2, "default"), "other node classes' templates are kept"


def test_stale_launch_templates_of_a_gone_node_class_are_deleted(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    stale = make_node_class()
    stale = stale.model_copy(update={"metadata": stale.metadata.model_copy(update={"name": "stale-class"})})
    provider.create(make_request(["m5.large"], node_class=stale))
    ec2.create_launch_template(  # a template nodeflow did not create, tagged like one of its
        LaunchTemplateName="karpenter.k8s.aws/not-nodeflows",
        LaunchTemplateData={"ImageId": "ami-12345678"},
        TagSpecifications=[
            {
                "ResourceType": "launch-template",
                "Tags": [
                    {"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"},
                    {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "stale-class"},
                ],
            }
        ],
    )
    default_templates = _templates_of(ec2, "default")
    current: dict[str, str | None] = {"default": None}  # this module's "default"s have many specs: keep them all

    assert provider.delete_stale_launch_templates(current, min_age_seconds=3600) == []  # too young
    listed = provider.stale_launch_templates(current, min_age_seconds=0)
    assert listed and sorted(_templates_of(ec2, "stale-class")) == sorted([*listed, "karpenter.k8s.aws/not-nodeflows"])
    deleted = provider.delete_stale_launch_templates(current, min_age_seconds=0)
    assert sorted(deleted) == sorted(listed)  # what the survey names is what a round deletes
    assert deleted and all(n.startswith("karpenter.k8s.aws/") for n in deleted)
    assert _templates_of(ec2, "stale-class") == ["karpenter.k8s.aws/not-nodeflows"]
    assert sorted(_templates_of(ec2, "default")) == sorted(default_templates)
    provider.create(make_request(["m5.large"], node_class=stale))  # a launch that needs one again recreates it


# ----- capacity reservations (devstack.aws.capacity_reservations; moto has none)


def _reservation(ec2, app: str, instance_type: str = "m5.large", zone: str = "us-west-2b", count: int = 1) -> str:  # type: ignore[no-untyped-def]
    created = ec2.create_capacity_reservation(
        InstanceType=instance_type,
        InstancePlatform="Linux/UNIX",
        AvailabilityZone=zone,
        InstanceCount=count,
        InstanceMatchCriteria="targeted",
        TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": [{"Key": "app", "Value": app}]}],
    )
    return str(created["CapacityReservation"]["CapacityReservationId"])


def _reserved_class(app: str) -> EC2NodeClass:
    node_class = make_node_class(capacityReservationSelectorTerms=[{"tags": {"app": app}}])
    return node_class.model_copy(update={"metadata": node_class.metadata.model_copy(update={"name": "reserved"})})


def _available(ec2, reservation_id: str) -> int:  # type: ignore[no-untyped-def]
    found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])["CapacityReservations"]
    return int(found[0]["AvailableInstanceCount"])


def _reserved_offers(provider: AWSCloudProvider, node_class: EC2NodeClass) -> list[tuple[str, str, bool]]:
    m5 = next(t for t in provider.instance_types(node_class) if t.name == "m5.large")
    return [(o.zone, o.reservation_id or "", o.available) for o in m5.offerings if o.capacity_type == "reserved"]


def test_a_reservation_is_resolved_offered_launched_into_and_freed(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    reservation_id = _reservation(ec2, "launch-into")
    ec2.create_capacity_reservation(  # not selected: other tags
        InstanceType="m5.large", InstancePlatform="Linux/UNIX", AvailabilityZone="us-west-2b", InstanceCount=1
    )
    node_class = _reserved_class("launch-into")
    [resolved] = provider.resolve_node_class(node_class).capacity_reservations
    assert (resolved.id, resolved.instance_type, resolved.zone, resolved.available) == (
        reservation_id, "m5.large", "us-west-2b", 1
    )  # fmt: skip
    assert (resolved.owner_id, resolved.instance_match_criteria, resolved.reservation_type) == (
        "123456789012", "targeted", "default"
    )  # fmt: skip
    assert _reserved_offers(provider, node_class) == [("us-west-2b", reservation_id, True)]
    ResolvedCapacityReservation.model_validate(reservation_status(resolved))  # status holds it as the CRD says

    request = make_request(["m5.large"], ["reserved", "on-demand"], node_class=node_class)
    instance = provider.create(request)
    assert (instance.capacity_type, instance.zone) == ("reserved", "us-west-2b")
    assert (instance.capacity_reservation_id, instance.capacity_reservation_type) == (reservation_id, "default")
    assert provider.get(instance.id).capacity_reservation_id == reservation_id  # DescribeInstances says so
    assert _available(ec2, reservation_id) == 0
    assert _reserved_offers(provider, node_class) == [("us-west-2b", reservation_id, False)]  # counted at once

    fallback = provider.create(make_request(["m5.large"], ["reserved", "on-demand"], node_class=node_class))
    assert (fallback.capacity_type, fallback.capacity_reservation_id) == ("on-demand", "")

    provider.delete(instance.id)
    assert _available(ec2, reservation_id) == 1


def test_a_full_reservation_refuses_the_launch_and_is_offered_no_more(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    reservation_id = _reservation(ec2, "filled-elsewhere")
    node_class = _reserved_class("filled-elsewhere")
    assert _reserved_offers(provider, node_class) == [("us-west-2b", reservation_id, True)]
    ec2.create_launch_template(  # someone else launches into it; nodeflow's count does not know yet
        LaunchTemplateName="fills-the-reservation",
        LaunchTemplateData={
            "ImageId": "ami-12345678",
            "CapacityReservationSpecification": {
                "CapacityReservationTarget": {"CapacityReservationId": reservation_id}
            },
        },
    )
    ec2.create_fleet(
        Type="instant",
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "fills-the-reservation", "Version": "$Latest"},
                "Overrides": [{"InstanceType": "m5.large", "AvailabilityZone": "us-west-2b"}],
            }
        ],
        TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"},
    )
    assert _available(ec2, reservation_id) == 0

    with pytest.raises(InsufficientCapacityError) as refused:
        provider.create(make_request(["m5.large"], ["reserved"], node_class=node_class))
    assert [(o.zone, o.capacity_type, o.reason) for o in refused.value.offerings] == [
        ("us-west-2b", "reserved", "ReservationCapacityExceeded")
    ]
    assert _reserved_offers(provider, node_class) == [("us-west-2b", reservation_id, False)]
    assert not provider.unavailable.is_unavailable("m5.large", "us-west-2b", "on-demand")
    fallback = provider.create(make_request(["m5.large"], ["reserved", "on-demand"], node_class=node_class))
    assert fallback.capacity_type == "on-demand"


def test_terms_that_match_no_reservation_resolve_to_none(provider: AWSCloudProvider) -> None:
    node_class = make_node_class(capacityReservationSelectorTerms=[{"id": "cr-0123456789abcdef0"}])
    assert provider.resolve_node_class(node_class).capacity_reservations == []
    assert _reserved_offers(provider, node_class) == []


def test_with_the_reserved_capacity_gate_off_no_reservation_is_read(aws: MotoServer, ec2) -> None:  # type: ignore[no-untyped-def]
    _reservation(ec2, "gate-off")
    gated = new_aws_cloud_provider(
        REGION, aws.url, cluster_name=CLUSTER, credentials=("testing", "testing"), reserved_capacity=False
    )
    assert gated.resolve_node_class(_reserved_class("gate-off")).capacity_reservations == []


def test_a_capacity_block_is_launched_into_with_its_market_type(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    end = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(hours=2)
    block = add_capacity_block(ec2_backends[MOTO_ACCOUNT][REGION], "m5.large", "us-west-2c", 1, end)
    node_class = make_node_class(capacityReservationSelectorTerms=[{"id": block.id}])
    [resolved] = provider.resolve_node_class(node_class).capacity_reservations
    assert (resolved.reservation_type, resolved.state, resolved.end_time) == (
        "capacity-block", "active", end.strftime("%Y-%m-%dT%H:%M:%SZ")
    )  # fmt: skip
    instance = provider.create(make_request(["m5.large"], ["reserved"], node_class=node_class))
    assert (instance.capacity_type, instance.capacity_reservation_id, instance.capacity_reservation_type) == (
        "reserved", block.id, "capacity-block"
    )  # fmt: skip
    described = ec2.describe_instances(InstanceIds=[instance.id])["Reservations"][0]["Instances"][0]
    assert described["InstanceLifecycle"] == "capacity-block"


def test_concurrent_same_shape_launches_share_a_create_fleet_and_each_claim_finds_its_instance(
    provider: AWSCloudProvider,
    ec2,  # type: ignore[no-untyped-def]
) -> None:
    requests = [make_request(["m5.large", "c5.large"]) for _ in range(20)]
    fleets_before = len(ec2.describe_fleets()["Fleets"])
    with ThreadPoolExecutor(len(requests)) as pool:
        instances = list(pool.map(provider.create, requests))
    fleets = len(ec2.describe_fleets()["Fleets"]) - fleets_before
    print(f"20 concurrent same-shape launches: {fleets} CreateFleet calls")  # the benchmark figure
    assert fleets < len(requests)  # 1 on an idle machine; more only when arrivals spread past 35 ms
    assert len({i.id for i in instances}) == len(requests)
    for request, instance in zip(requests, instances, strict=True):
        assert instance.tags["karpenter.sh/nodeclaim"] == request.node_claim_name
        assert instance.tags["Name"] == request.node_claim_name
        assert instance.tags["karpenter.sh/nodepool"] == "default"
        assert provider.create(request).id == instance.id  # a retried launch adopts its instance


def test_a_launch_sends_at_most_60_overrides_keeping_the_min_values_families(
    provider: AWSCloudProvider,
    ec2,  # type: ignore[no-untyped-def]
) -> None:
    catalog = provider.instance_types(make_node_class())
    families = sorted({it.labels["karpenter.k8s.aws/instance-family"] for it in catalog})[:40]
    types = [it.name for it in catalog if it.labels["karpenter.k8s.aws/instance-family"] in families]
    request = make_request(types, min_values={"karpenter.k8s.aws/instance-family": 30})
    provider.create(request)
    fleet = next(
        f
        for f in ec2.describe_fleets()["Fleets"]
        if {"Key": "karpenter.sh/nodeclaim", "Value": request.node_claim_name} in f.get("Tags", [])
    )
    overrides = [o for c in fleet["LaunchTemplateConfigs"] for o in c.get("Overrides", [])]
    assert len(types) * len(ZONES) > 60
    assert len(overrides) <= 60
    assert len({o["InstanceType"].split(".")[0] for o in overrides}) >= 30


def test_a_launch_limited_to_a_zone_id_lands_in_that_zone(provider: AWSCloudProvider, ec2) -> None:  # type: ignore[no-untyped-def]
    tag = [{"Name": "tag:karpenter.sh/discovery", "Values": [CLUSTER]}]
    zone_ids = {s["AvailabilityZone"]: s["AvailabilityZoneId"] for s in ec2.describe_subnets(Filters=tag)["Subnets"]}
    instance = provider.create(make_request(["m5.large"], zone_ids=[zone_ids["us-west-2c"]]))
    assert instance.zone == "us-west-2c"


def test_a_node_class_placement_group_is_resolved_and_its_instances_are_placed_in_it(
    provider: AWSCloudProvider,
    ec2,  # type: ignore[no-untyped-def]
) -> None:
    from activities.nodeclaim.translate import launched_labels

    group = ec2.create_placement_group(GroupName="it-partition", Strategy="partition", PartitionCount=3)
    group_id = group["PlacementGroup"]["GroupId"]
    by_name = make_node_class(placementGroupSelector={"name": "it-partition"})
    assert provider.resolve_node_class(by_name).placement_group_id == group_id
    by_id = make_node_class(placementGroupSelector={"id": group_id})
    assert provider.resolve_node_class(by_id).placement_group_id == group_id

    launched = [provider.create(make_request(["m5.large"], node_class=by_name)) for _ in range(2)]
    assert {i.placement_group_id for i in launched} == {group_id}
    assert sorted(i.placement_group_partition for i in launched) == ["1", "2"]  # EC2 spreads them
    labels = launched_labels(launched[0], {})
    assert labels["karpenter.k8s.aws/placement-group-id"] == group_id
    assert labels["karpenter.k8s.aws/placement-group-partition"] == launched[0].placement_group_partition
    described = ec2.describe_instances(InstanceIds=[launched[0].id])["Reservations"][0]["Instances"][0]
    assert described["Placement"]["GroupId"] == group_id
    with pytest.raises(ec2.exceptions.ClientError, match=r"InvalidPlacementGroup\.InUse"):
        ec2.delete_placement_group(GroupName="it-partition")  # as EC2: not while instances run in it
    for instance in launched:
        provider.delete(instance.id)
    ec2.delete_placement_group(GroupName="it-partition")
    with pytest.raises(NodeClassNotReadyError, match=r"spec\.placementGroupSelector"):
        provider.resolve_node_class(by_name)


def test_a_node_class_selecting_a_missing_placement_group_is_not_ready(provider: AWSCloudProvider) -> None:
    for selector in ({"name": "it-nowhere"}, {"id": "pg-0123456789abcdef0"}):
        node_class = make_node_class(placementGroupSelector=selector)
        with pytest.raises(NodeClassNotReadyError, match=r"spec\.placementGroupSelector"):
            provider.resolve_node_class(node_class)
        with pytest.raises(NodeClassNotReadyError, match=r"spec\.placementGroupSelector"):
            provider.create(make_request(["m5.large"], node_class=node_class))


def test_vm_memory_overhead_and_reserved_enis_shape_every_instance_type(
    aws: MotoServer, provider: AWSCloudProvider
) -> None:
    tuned = new_aws_cloud_provider(
        REGION, aws.url, cluster_name=CLUSTER, credentials=("testing", "testing"),
        vm_memory_overhead_percent=0.0, reserved_enis=1,
    )  # fmt: skip
    node_class = make_node_class()
    default = {it.name: it for it in provider.instance_types(node_class)}["m5.large"]
    m5 = {it.name: it for it in tuned.instance_types(node_class)}["m5.large"]
    # m5.large: 8192 MiB, 3 ENIs of 10 IPv4 addresses each
    assert (default.capacity["memory"], m5.capacity["memory"]) == ("7577Mi", "8Gi")
    assert (default.capacity["pods"], m5.capacity["pods"]) == ("29", "20")
    assert {it.name for it in tuned.instance_types(None)} == {it.name for it in provider.instance_types(None)}


def test_an_instance_is_named_for_its_claim_or_the_users_tag_then_after_its_node(provider: AWSCloudProvider) -> None:
    plain = provider.create(make_request(["m5.large"]))
    assert plain.tags["Name"] == plain.tags["karpenter.sh/nodeclaim"], "the claim's name until its Node registers"
    provider.name_instance(plain.id, "ip-10-0-1-23.us-west-2.compute.internal")
    assert provider.get(plain.id).tags["Name"] == "ip-10-0-1-23.us-west-2.compute.internal"
    custom = provider.create(make_request(["m5.large"], node_class=make_node_class(tags={"Name": "team-a-worker"})))
    assert custom.tags["Name"] == "team-a-worker", "an EC2NodeClass's Name tag is the user's to set"


def test_a_node_class_the_controller_may_launch_with_passes_validation(provider: AWSCloudProvider) -> None:
    resolved = provider.resolve_node_class(make_node_class(tags={"validation": "passes"}))
    assert resolved.conditions["ValidationSucceeded"] == ("True", "ValidationSucceeded", "")


def test_a_launch_call_the_controller_may_not_make_fails_validation(
    provider: AWSCloudProvider, clean: FaultClient
) -> None:
    node_class = make_node_class(tags={"validation": "denied"})
    clean.access_denied("RunInstances", 1)  # the policy forbids RunInstances (tag conditions, an SCP...)
    with pytest.raises(NodeClassNotReadyError) as refused:
        provider.resolve_node_class(node_class)
    status, reason, message = refused.value.conditions["ValidationSucceeded"]
    assert (status, reason) == ("False", "RunInstancesAuthCheckFailed")
    assert message.startswith("Controller isn't authorized to call ec2:RunInstances")
    assert refused.value.conditions["AMIsReady"][0] == "True", "the parts resolved; only the launch is refused"


def test_a_throttled_dry_run_is_no_verdict_and_the_node_class_stays_ready(
    provider: AWSCloudProvider, clean: FaultClient
) -> None:
    clean.throttle("CreateFleet", 5)
    resolved = provider.resolve_node_class(make_node_class(tags={"validation": "throttled"}))
    assert resolved.conditions["ValidationSucceeded"][:2] == ("Unknown", "DryRunThrottled")


def test_with_dry_runs_disabled_validation_makes_no_call(aws: MotoServer, clean: FaultClient) -> None:
    quiet = new_aws_cloud_provider(
        REGION, aws.url, cluster_name=CLUSTER, credentials=("testing", "testing"), dry_run=False
    )
    clean.access_denied("CreateFleet", 1)
    resolved = quiet.resolve_node_class(make_node_class(tags={"validation": "off"}))
    assert resolved.conditions["ValidationSucceeded"][0] == "True"
    assert clean.get()["accessDenied"] == {"CreateFleet": 1}, "no CreateFleet was sent"
