"""The simulated kubelet: pure node construction, then against moto (EC2 over HTTP) and the emulated
Kubernetes API."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from devstack.binder import PodBinder
from devstack.kube.server import KubeApiServer
from devstack.kubelet import SimulatedKubelet, capacity, node
from devstack.kubelet import kubelet as kubelet_module
from kube.client import KubeClient
from kube.errors import NotFoundError
from kube.resources import NODE, NODECLAIM, POD
from kube.types import Obj
from tests.devstack.counting import CountingKube
from tests.eventually import eventually

M5_LARGE: dict[str, Any] = {
    "InstanceType": "m5.large",
    "VCpuInfo": {"DefaultVCpus": 2},
    "MemoryInfo": {"SizeInMiB": 8192},
    "ProcessorInfo": {"SupportedArchitectures": ["i386", "x86_64"]},
    "NetworkInfo": {"MaximumNetworkInterfaces": 3, "Ipv4AddressesPerInterface": 10},
}


def type_info(**overrides: Any) -> dict[str, Any]:
    return {**M5_LARGE, **overrides}


# -- pure: capacity --------------------------------------------------------------------------------


@pytest.mark.parametrize(("cpu_millis", "reserved"), [(500, 30), (1000, 60), (2000, 70), (4000, 80), (96000, 310)])
def test_kube_reserved_cpu_tiers(cpu_millis: int, reserved: int) -> None:
    assert capacity.kube_reserved_cpu_millis(cpu_millis) == reserved


def test_m5_large_capacity_and_allocatable() -> None:
    units = capacity.capacity_units(type_info())
    assert capacity.as_quantities(units) == {"cpu": "2", "ephemeral-storage": "20Gi", "memory": "8Gi", "pods": "29"}
    assert capacity.as_quantities(capacity.allocatable_units(units)) == {
        "cpu": "1930m",
        "ephemeral-storage": "17Gi",
        "memory": f"{8192 - (11 * 29 + 255) - 100}Mi",
        "pods": "29",
    }


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"GpuInfo": {"Gpus": [{"Manufacturer": "NVIDIA", "Count": 4}]}}, {"nvidia.com/gpu": 4}),
        ({"GpuInfo": {"Gpus": [{"Manufacturer": "AMD", "Count": 1}]}}, {"amd.com/gpu": 1}),
        ({"NeuronInfo": {"NeuronDevices": [{"Count": 2}]}}, {"aws.amazon.com/neuron": 2}),
        (
            {"NetworkInfo": {**M5_LARGE["NetworkInfo"], "EfaInfo": {"MaximumEfaInterfaces": 1}}},
            {"vpc.amazonaws.com/efa": 1},
        ),
        ({}, {}),
    ],
)
def test_extended_resources(overrides: dict[str, Any], expected: dict[str, int]) -> None:
    assert capacity.extended_resources(type_info(**overrides)) == expected


@pytest.mark.parametrize(
    ("archs", "expected"), [(["arm64"], "arm64"), (["x86_64"], "amd64"), (["i386", "x86_64"], "amd64")]
)
def test_architecture(archs: list[str], expected: str) -> None:
    assert capacity.architecture(type_info(ProcessorInfo={"SupportedArchitectures": archs})) == expected


# -- pure: the Node ------------------------------------------------------------------------------

INSTANCE = {
    "InstanceId": "i-0abc",
    "InstanceType": "m5.large",
    "PrivateDnsName": "ip-10-0-1-4.us-west-2.compute.internal",
    "PrivateIpAddress": "10.0.1.4",
    "Placement": {"AvailabilityZone": "us-west-2a"},
    "InstanceLifecycle": "spot",
    "Tags": [{"Key": "karpenter.sh/nodeclaim", "Value": "default-x1"}],
}
CLAIM: Obj = {
    "metadata": {"name": "default-x1", "labels": {"karpenter.sh/nodepool": "default", "team": "a"}},
    "spec": {
        "requirements": [
            {"key": "tier", "operator": "In", "values": ["gold"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "c5.large"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "other", "operator": "Exists"},
        ],
        "taints": [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "cni-not-ready", "effect": "NoSchedule"}],
    },
}


def test_build_node_labels_come_from_the_claim_and_the_kubelet_wins() -> None:
    built = node.build_node(INSTANCE, type_info(), CLAIM, "us-west-2", "c1")
    assert built["metadata"]["labels"] == {
        "karpenter.sh/capacity-type": "spot",  # the instance's truth over the claim's requirement
        "karpenter.sh/nodepool": "default",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": "ip-10-0-1-4.us-west-2.compute.internal",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m5.large",
        "team": "a",
        "tier": "gold",
        "topology.kubernetes.io/region": "us-west-2",
        "topology.kubernetes.io/zone": "us-west-2a",
    }
    assert built["metadata"]["name"] == "ip-10-0-1-4.us-west-2.compute.internal"
    assert built["spec"]["providerID"] == "aws:///us-west-2a/i-0abc"
    assert built["spec"]["taints"] == [
        {"key": "dedicated", "value": "a", "effect": "NoSchedule"},
        {"key": "cni-not-ready", "effect": "NoSchedule"},
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    ]


def test_a_windows_instance_registers_a_windows_node_with_the_claims_build_label() -> None:
    windows = {**INSTANCE, "Platform": "windows"}
    claim = {**CLAIM, "metadata": {"name": "w", "labels": {"node.kubernetes.io/windows-build": "10.0.20348"}}}
    labels = node.build_node(windows, type_info(), claim, "us-west-2", "c1")["metadata"]["labels"]
    assert labels["kubernetes.io/os"] == "windows"
    assert labels["node.kubernetes.io/windows-build"] == "10.0.20348"
    linux_claim = {**CLAIM, "metadata": {"name": "l", "labels": {"kubernetes.io/os": "windows"}}}
    assert (
        node.build_node(INSTANCE, type_info(), linux_claim, "us-west-2", "c1")["metadata"]["labels"]["kubernetes.io/os"]
        == "linux"
    )  # the kubelet reports what the instance runs


def test_a_node_without_claim_or_dns_name() -> None:
    bare = {**INSTANCE, "PrivateDnsName": "", "Tags": [], "InstanceLifecycle": None}
    built = node.build_node(bare, type_info(), None, "us-west-2", "c1")
    assert built["metadata"]["name"] == "i-0abc"
    assert built["metadata"]["labels"]["karpenter.sh/capacity-type"] == "on-demand"
    assert built["spec"]["taints"] == [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]


def test_node_status_starts_not_ready_with_addresses_and_node_info() -> None:
    status = node.node_status(INSTANCE, type_info(), ready=False, now="2026-01-01T00:00:00Z")
    assert {"type": "InternalIP", "address": "10.0.1.4"} in status["addresses"]
    assert status["nodeInfo"]["architecture"] == "amd64"
    assert not node.is_ready({"status": status})
    assert node.is_ready({"status": {"conditions": node.conditions(ready=True, now="t")}})


@pytest.mark.parametrize(
    ("provider_id", "expected"),
    [("aws:///us-west-2a/i-0abc", "i-0abc"), ("kwok://n1", None), ("", None), ("aws:///", None)],
)
def test_instance_id_of(provider_id: str, expected: str | None) -> None:
    assert node.instance_id_of({"spec": {"providerID": provider_id}}) == expected


# -- against moto and the emulated API -----------------------------------------------------------


@pytest.fixture(scope="module")
def ec2() -> Iterator[Any]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client("ec2", endpoint_url=f"http://{host}:{port}", region_name="us-west-2",
                          aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    yield client
    server.stop()


@pytest.fixture(scope="module")
def subnet(ec2: Any) -> str:
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet_id: str = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", AvailabilityZone="us-west-2a")["Subnet"][
        "SubnetId"
    ]
    return subnet_id


@pytest.fixture(scope="module")
def api() -> Iterator[KubeApiServer]:
    server = KubeApiServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kube(api: KubeApiServer) -> Iterator[KubeClient]:
    client = KubeClient.for_url(api.url)
    yield client
    client.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def launch(ec2: Any, subnet: str, cluster: str, claim: str | None = None, instance_type: str = "m5.large") -> str:
    tags = [{"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"}]
    if claim:
        tags.append({"Key": "karpenter.sh/nodeclaim", "Value": claim})
    reservation = ec2.run_instances(
        ImageId="ami-12345678",
        MinCount=1,
        MaxCount=1,
        InstanceType=instance_type,
        SubnetId=subnet,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )
    instance_id: str = reservation["Instances"][0]["InstanceId"]
    return instance_id


def node_of(kube: KubeClient, instance_id: str) -> Obj:
    matches = [n for n in kube.list(NODE) if n.get("spec", {}).get("providerID", "").endswith(f"/{instance_id}")]
    assert len(matches) == 1, f"expected one node for {instance_id}, found {len(matches)}"
    return matches[0]


@pytest.fixture
def cluster() -> str:
    return f"c-{uuid.uuid4().hex[:8]}"


def make_kubelet(kube: KubeClient, ec2: Any, cluster: str, clock: Clock) -> SimulatedKubelet:
    return SimulatedKubelet(kube, ec2, cluster, ready_delay=1.0, startup_taint_delay=2.0, clock=clock)


def test_registers_a_node_that_turns_ready_then_drops_startup_taints(
    kube: KubeClient, ec2: Any, subnet: str, cluster: str
) -> None:
    claim = kube.create(NODECLAIM, {**CLAIM, "metadata": {**CLAIM["metadata"], "name": f"{cluster}-claim"}})
    instance_id = launch(ec2, subnet, cluster, claim["metadata"]["name"])
    clock = Clock()
    kubelet = make_kubelet(kube, ec2, cluster, clock)

    kubelet.sync_once()
    registered = node_of(kube, instance_id)
    assert registered["metadata"]["labels"]["tier"] == "gold"
    assert registered["metadata"]["labels"]["karpenter.sh/capacity-type"] == "on-demand"
    assert registered["status"]["allocatable"]["cpu"] == "1930m"
    assert registered["status"]["capacity"]["pods"] == "29"
    assert not node.is_ready(registered)
    taint_keys = {t["key"] for t in registered["spec"]["taints"]}
    assert taint_keys == {"dedicated", "cni-not-ready", "karpenter.sh/unregistered"}

    clock.now += 0.5
    kubelet.sync_once()
    assert not node.is_ready(node_of(kube, instance_id))

    clock.now += 0.5
    kubelet.sync_once()
    ready = node_of(kube, instance_id)
    assert node.is_ready(ready)
    assert "cni-not-ready" in {t["key"] for t in ready["spec"]["taints"]}

    clock.now += 2.0
    kubelet.sync_once()
    settled = node_of(kube, instance_id)
    assert {t["key"] for t in settled["spec"]["taints"]} == {"dedicated", "karpenter.sh/unregistered"}


def test_a_ready_node_reports_its_status_again_every_report_interval(
    kube: KubeClient, ec2: Any, subnet: str, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    claim = kube.create(NODECLAIM, {**CLAIM, "metadata": {**CLAIM["metadata"], "name": f"{cluster}-claim"}})
    instance_id = launch(ec2, subnet, cluster, claim["metadata"]["name"])
    clock = Clock()
    kubelet = SimulatedKubelet(kube, ec2, cluster, ready_delay=0, startup_taint_delay=0, clock=clock,
                               status_report_interval=300.0)  # fmt: skip
    kubelet.sync_once()
    kubelet.sync_once()
    ready = node_of(kube, instance_id)
    assert node.is_ready(ready)
    clock.now += 299.0
    kubelet.sync_once()
    assert node_of(kube, instance_id)["metadata"]["resourceVersion"] == ready["metadata"]["resourceVersion"]
    clock.now += 1.0
    monkeypatch.setattr(kubelet_module, "_now", lambda: "2030-01-01T00:05:00Z")  # the wall clock moved too
    kubelet.sync_once()
    reported = node_of(kube, instance_id)
    assert reported["metadata"]["resourceVersion"] != ready["metadata"]["resourceVersion"]
    before = {c["type"]: c for c in ready["status"]["conditions"]}
    for condition in reported["status"]["conditions"]:
        was = before[condition["type"]]
        assert {k: v for k, v in condition.items() if k != "lastHeartbeatTime"} == {
            k: v for k, v in was.items() if k != "lastHeartbeatTime"
        }, "only the heartbeat moves"
        assert condition["lastHeartbeatTime"] == "2030-01-01T00:05:00Z"
    assert node.is_ready(reported)


def test_startup_taints_put_back_by_registration_are_removed_again(
    kube: KubeClient, ec2: Any, subnet: str, cluster: str
) -> None:
    claim = kube.create(NODECLAIM, {**CLAIM, "metadata": {**CLAIM["metadata"], "name": f"{cluster}-claim"}})
    instance_id = launch(ec2, subnet, cluster, claim["metadata"]["name"])
    clock = Clock()
    kubelet = SimulatedKubelet(kube, ec2, cluster, ready_delay=0, startup_taint_delay=0, clock=clock)
    kubelet.sync_once()
    name = node_of(kube, instance_id)["metadata"]["name"]
    assert "cni-not-ready" not in {t["key"] for t in node_of(kube, instance_id)["spec"]["taints"]}
    # nodeflow's registration: drop the unregistered taint, (re)apply the claim's startup taints
    kube.patch(NODE, name, {"spec": {"taints": [{"key": "cni-not-ready", "effect": "NoSchedule"}]}})
    kubelet.sync_once()
    assert node_of(kube, instance_id)["spec"]["taints"] == []


def test_never_creates_a_node_twice_and_ignores_other_clusters(
    kube: KubeClient, ec2: Any, subnet: str, cluster: str
) -> None:
    mine = launch(ec2, subnet, cluster)
    theirs = launch(ec2, subnet, f"{cluster}-other")
    first = SimulatedKubelet(kube, ec2, cluster, ready_delay=0, startup_taint_delay=0)
    second = SimulatedKubelet(kube, ec2, cluster, ready_delay=0, startup_taint_delay=0)  # e.g. after a restart
    first.sync_once()
    second.sync_once()
    first.sync_once()
    assert node.is_ready(node_of(kube, mine))
    assert not [n for n in kube.list(NODE) if n["spec"].get("providerID", "").endswith(theirs)]


def test_deletes_the_node_of_a_terminated_instance_but_never_foreign_nodes(
    kube: KubeClient, ec2: Any, subnet: str, cluster: str
) -> None:
    instance_id = launch(ec2, subnet, cluster)
    foreign = kube.create(NODE, {"metadata": {"name": f"{cluster}-foreign"},
                                 "spec": {"providerID": "aws:///us-west-2a/i-00000000000000000"}})  # fmt: skip
    kubelet = SimulatedKubelet(kube, ec2, cluster, ready_delay=0, startup_taint_delay=0)
    kubelet.sync_once()
    name = node_of(kube, instance_id)["metadata"]["name"]
    ec2.terminate_instances(InstanceIds=[instance_id])
    kubelet.sync_once()
    with pytest.raises(NotFoundError):
        kube.get(NODE, name)
    assert kube.get(NODE, foreign["metadata"]["name"])


def test_runs_bound_pods_and_finishes_deleting_terminating_ones(
    kube: KubeClient, api: KubeApiServer, ec2: Any, subnet: str, cluster: str
) -> None:
    instance_id = launch(ec2, subnet, cluster)
    kubelet = SimulatedKubelet(kube, ec2, cluster, ready_delay=0, startup_taint_delay=0)
    kubelet.sync_once()
    registered = node_of(kube, instance_id)
    node_name = registered["metadata"]["name"]
    internal_ip = next(a["address"] for a in registered["status"]["addresses"] if a["type"] == "InternalIP")
    pods = [f"{cluster}-run", f"{cluster}-stop"]
    for pod in pods:
        kube.create(POD, {"metadata": {"name": pod, "namespace": "default", "finalizers": ["example.com/hold"]},
                          "spec": {"nodeName": node_name, "containers": [{"name": "app", "image": "i"}]}})  # fmt: skip
    kube.delete(POD, pods[1], "default")
    kubelet.sync_once()
    kubelet.sync_once()

    running = kube.get(POD, pods[0], "default")["status"]
    assert running["phase"] == "Running"
    assert running["hostIP"] == internal_ip
    assert running["podIP"].startswith("10.") and running["podIP"] != internal_ip
    conditions = {c["type"]: c["status"] for c in running["conditions"]}
    assert conditions["Ready"] == conditions["ContainersReady"] == conditions["PodScheduled"] == "True"
    deletes = api.call(lambda: len(api.emulator[f"delete /api/v1/namespaces/default/pods/{pods[1]}"]))
    assert deletes == 2  # the test's own delete, then the kubelet's, once
    for pod in pods:
        kube.patch(POD, pod, {"metadata": {"finalizers": None}}, "default")


def test_survives_api_errors_and_catches_up(
    kube: KubeClient, api: KubeApiServer, ec2: Any, subnet: str, cluster: str
) -> None:
    instance_id = launch(ec2, subnet, cluster)
    name = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["PrivateDnsName"]
    kubelet = SimulatedKubelet(kube, ec2, cluster, ready_delay=0, startup_taint_delay=0)

    def fail_next_create_and_status_post() -> None:
        creates = api.emulator["post /api/v1/nodes"]
        seen = len(creates)  # reactions slice the request log: fail the next create, not the first
        creates[seen : seen + 1] << 503
        api.emulator[f"patch /api/v1/nodes/{name}/status"][:1] << 500

    api.call(fail_next_create_and_status_post)
    kubelet.sync_once()
    with pytest.raises(NotFoundError):
        kube.get(NODE, name)
    kubelet.sync_once()
    assert not kube.get(NODE, name).get("status", {}).get("capacity")
    kubelet.sync_once()
    recovered = kube.get(NODE, name)
    assert recovered["status"]["capacity"]["cpu"] == "2"
    assert node.is_ready(recovered)


def test_run_loop_until_stopped(kube: KubeClient, ec2: Any, subnet: str, cluster: str) -> None:
    instance_id = launch(ec2, subnet, cluster)
    kubelet = SimulatedKubelet(kube, ec2, cluster, ready_delay=0.05, startup_taint_delay=0, poll_interval=0.02)
    stop = threading.Event()
    thread = threading.Thread(target=kubelet.run, args=(stop,))
    thread.start()
    try:
        eventually(lambda: any(node.is_ready(n) and n["spec"]["providerID"].endswith(instance_id)
                               for n in kube.list(NODE)), what=f"a Ready node for {instance_id}")  # fmt: skip
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_with_the_binder_a_pending_pod_ends_up_running_on_the_new_node(
    kube: KubeClient, ec2: Any, subnet: str, cluster: str
) -> None:
    instance_id = launch(ec2, subnet, cluster)
    kubelet = SimulatedKubelet(kube, ec2, cluster, ready_delay=0, startup_taint_delay=0)
    kubelet.sync_once()
    name = node_of(kube, instance_id)["metadata"]["name"]
    kube.patch(NODE, name, {"spec": {"taints": []}})  # what nodeflow's registration does
    pod = f"{cluster}-app"
    container = {"name": "app", "image": "i", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    spec = {"nodeSelector": {"kubernetes.io/hostname": name}, "containers": [container]}
    kube.create(POD, {"metadata": {"name": pod, "namespace": "default"}, "spec": spec})
    assert PodBinder(kube).bind_once() >= 1
    kubelet.sync_once()
    placed = kube.get(POD, pod, "default")
    assert (placed["spec"]["nodeName"], placed["status"]["phase"]) == (name, "Running")
    kube.delete(POD, pod, "default")


def test_an_idle_run_loop_reads_only_at_its_backstop(kube: KubeClient, ec2: Any, cluster: str) -> None:
    counting = CountingKube(kube)
    described: list[str] = []

    def count_describe(**_: Any) -> None:
        described.append("DescribeInstances")

    ec2.meta.events.register("before-call.ec2.DescribeInstances", count_describe)
    # A fast poll that the idle loop must not use, and a short backstop to count a few passes quickly.
    kubelet = SimulatedKubelet(counting, ec2, cluster, poll_interval=0.02, backstop_interval=0.5)  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=kubelet.run, args=(stop,))
    thread.start()
    try:
        eventually(lambda: described, what="the first pass")
        # The watches' first events (the nodes and claims already there) open a short window of fast
        # passes: count from once no call was made for 0.3 s.
        last = [-1, time.monotonic()]

        def quiet() -> bool:
            now, calls = time.monotonic(), counting.total() + len(described)
            if calls != last[0]:
                last[:] = [calls, now]
            return now - last[1] >= 0.3

        eventually(quiet, timeout=5, interval=0.05, what="the kubelet settled")
        lists, describes = counting.total(), len(described)
        stop.wait(1.5)  # the idle window counted: a fixed 0.02 s poll would pass ~75 times
        idle_lists, idle_describes = counting.total() - lists, len(described) - describes
    finally:
        stop.set()
        thread.join(5)
        ec2.meta.events.unregister("before-call.ec2.DescribeInstances", count_describe)
    assert not thread.is_alive()
    assert idle_lists <= 6, f"an idle kubelet listed {idle_lists} times in 1.5 s: {counting.lists}"
    assert idle_describes <= 6, f"an idle kubelet described instances {idle_describes} times in 1.5 s"


def test_claim_and_pod_events_drive_the_run_loop_without_the_backstop(
    kube: KubeClient, ec2: Any, subnet: str, cluster: str
) -> None:
    kubelet = SimulatedKubelet(kube, ec2, cluster, ready_delay=0.05, startup_taint_delay=0, poll_interval=0.02,
                               backstop_interval=60)  # fmt: skip
    stop = threading.Event()
    thread = threading.Thread(target=kubelet.run, args=(stop,))
    thread.start()
    try:
        claim = kube.create(NODECLAIM, {**CLAIM, "metadata": {**CLAIM["metadata"], "name": f"{cluster}-claim"}})
        instance_id = launch(ec2, subnet, cluster, claim["metadata"]["name"])
        # What the launch does next: the claim's status gets the providerID; the kubelet reads EC2 on it.
        provider_id = f"aws:///us-west-2a/{instance_id}"
        kube.patch(NODECLAIM, claim["metadata"]["name"], {"status": {"providerID": provider_id}}, subresource="status")

        def ready_untainted() -> Obj | None:
            found = [n for n in kube.list(NODE) if n["spec"].get("providerID", "").endswith(f"/{instance_id}")]
            if (
                found
                and node.is_ready(found[0])
                and not any(t["key"] == "cni-not-ready" for t in found[0]["spec"].get("taints") or [])
            ):
                return found[0]
            return None

        name = eventually(ready_untainted, timeout=5, what=f"a Ready node without startup taints for {instance_id}")[
            "metadata"
        ]["name"]
        pod = f"{cluster}-bound"
        container = {"name": "app", "image": "i"}
        kube.create(POD, {"metadata": {"name": pod, "namespace": "default"},
                          "spec": {"nodeName": name, "containers": [container]}})  # fmt: skip
        eventually(lambda: kube.get(POD, pod, "default").get("status", {}).get("phase") == "Running", timeout=5,
                   what=f"pod {pod} Running")  # fmt: skip
        kube.delete(POD, pod, "default")
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
