"""EC2 InstanceTypeInfo -> InstanceType: capacity, overhead and labels."""

from __future__ import annotations

from apis import labels as L
from apis.ec2nodeclass import KubeletConfiguration
from apis.instancetype import Offering
from apis.values.quantity import to_resource_list
from cloudprovider.aws.instancetypes.translate import (
    InstanceTypeSettings,
    instance_labels,
    is_supported,
    to_instance_type,
)
from tests.unit.cloudprovider.builders import instance_type_info

GIB = 2**30
MIB = 2**20


def test_m5_large_capacity_subtracts_vm_overhead_and_uses_eni_limited_pods() -> None:
    it = to_instance_type(instance_type_info(), [])
    capacity = to_resource_list(it.capacity)
    assert capacity["cpu"] == 2000
    assert capacity["memory"] == (8192 - 615) * MIB  # 7.5% of 8192 MiB, rounded up
    assert capacity["pods"] == 29  # 3 x (10 - 1) + 2
    assert capacity["ephemeral-storage"] == 20 * GIB


def test_overhead_is_kube_reserved_plus_eviction_threshold() -> None:
    overhead = to_resource_list(to_instance_type(instance_type_info(), []).overhead)
    assert overhead["cpu"] == 70  # 60m for the first core + 10m for the second
    assert overhead["memory"] == (11 * 29 + 255 + 100) * MIB
    assert overhead["ephemeral-storage"] == 1 * GIB + 2 * GIB  # kube-reserved 1Gi + 10% of 20Gi


def test_kubelet_settings_change_pods_and_overhead() -> None:
    kubelet = KubeletConfiguration(
        max_pods=110,
        pods_per_core=4,
        kube_reserved={"cpu": "200m"},
        system_reserved={"memory": "100Mi"},
        eviction_hard={"memory.available": "5%"},
    )
    it = to_instance_type(instance_type_info(), [], InstanceTypeSettings(kubelet=kubelet, root_volume_bytes=100 * GIB))
    capacity, overhead = to_resource_list(it.capacity), to_resource_list(it.overhead)
    assert capacity["pods"] == 8  # min(110, 4 pods per core x 2 vCPUs)
    assert capacity["ephemeral-storage"] == 100 * GIB
    assert overhead["cpu"] == 200
    five_percent = -(-capacity["memory"] * 5 // 100)
    assert overhead["memory"] == (11 * 8 + 255) * MIB + 100 * MIB + five_percent


def test_labels_follow_karpenter_names() -> None:
    labels = instance_labels(instance_type_info())
    assert labels[L.INSTANCE_TYPE] == "m5.large"
    assert labels[L.ARCH] == "amd64"
    assert labels[L.OS] == "linux"
    assert labels[L.INSTANCE_FAMILY] == "m5"
    assert labels[L.INSTANCE_CATEGORY] == "m"
    assert labels[L.INSTANCE_GENERATION] == "5"
    assert labels[L.INSTANCE_SIZE] == "large"
    assert labels[L.INSTANCE_CPU] == "2"
    assert labels[L.INSTANCE_CPU_MANUFACTURER] == "intel"
    assert labels[L.INSTANCE_MEMORY] == "8192"
    assert labels[L.INSTANCE_HYPERVISOR] == "nitro"
    assert labels[L.INSTANCE_NETWORK_BANDWIDTH] == "750"
    assert labels[L.INSTANCE_EBS_BANDWIDTH] == "4750"
    assert labels[L.INSTANCE_TENANCY] == "default"
    assert list(labels) == sorted(labels)


def test_family_parsing_handles_unusual_names() -> None:
    for name, category, generation in (
        ("u-6tb1.metal", "u", "1"),
        ("c7i-flex.large", "c", "7"),
        ("inf2.xlarge", "inf", "2"),
    ):
        labels = instance_labels(instance_type_info(name=name))
        assert (labels[L.INSTANCE_CATEGORY], labels[L.INSTANCE_GENERATION]) == (category, generation)


def test_gpu_neuron_and_efa_become_extended_resources_and_labels() -> None:
    gpu = instance_type_info(
        name="p4d.24xlarge",
        GpuInfo={"Gpus": [{"Count": 8, "Manufacturer": "NVIDIA", "Name": "A100", "MemoryInfo": {"SizeInMiB": 40960}}]},
    )
    gpu["NetworkInfo"].update(EfaSupported=True, EfaInfo={"MaximumEfaInterfaces": 4})
    it = to_instance_type(gpu, [])
    assert it.capacity["nvidia.com/gpu"] == "8"
    assert it.capacity["vpc.amazonaws.com/efa"] == "4"
    assert (it.labels[L.INSTANCE_GPU_NAME], it.labels[L.INSTANCE_GPU_COUNT]) == ("a100", "8")
    assert it.labels[L.INSTANCE_GPU_MEMORY] == "40960"
    neuron = instance_type_info(name="inf2.xlarge", NeuronInfo={"NeuronDevices": [{"Count": 1, "Name": "Inferentia2"}]})
    it = to_instance_type(neuron, [])
    assert it.capacity["aws.amazon.com/neuron"] == "1"
    assert it.labels[L.INSTANCE_ACCELERATOR_NAME] == "inferentia2"


def test_arm64_and_unsupported_architectures() -> None:
    assert instance_labels(instance_type_info(name="m6g.large", arch="arm64"))[L.ARCH] == "arm64"
    assert not is_supported(instance_type_info(arch="i386"))
    assert not is_supported(instance_type_info(name="mac2.metal"))


def test_offerings_are_sorted_by_zone_then_capacity_type() -> None:
    offerings = [
        Offering(zone="us-west-2b", capacity_type="spot", price=0.03),
        Offering(zone="us-west-2a", capacity_type="spot", price=0.03),
        Offering(zone="us-west-2a", capacity_type="on-demand", price=0.096),
    ]
    it = to_instance_type(instance_type_info(), offerings)
    assert [(o.zone, o.capacity_type) for o in it.offerings] == [
        ("us-west-2a", "on-demand"),
        ("us-west-2a", "spot"),
        ("us-west-2b", "spot"),
    ]


def test_raid0_makes_the_instance_store_the_ephemeral_storage_on_types_that_have_one() -> None:
    store = {"TotalSizeInGB": 600, "Disks": [{"SizeInGB": 300, "Count": 2, "Type": "ssd"}], "NvmeSupport": "required"}
    m5d = instance_type_info("m5d.large", InstanceStorageInfo=store)
    raid0 = InstanceTypeSettings(root_volume_bytes=50 * GIB, instance_store_raid0=True)
    it = to_instance_type(m5d, [], raid0)
    assert it.labels[L.INSTANCE_LOCAL_NVME] == "600"
    assert to_resource_list(it.capacity)["ephemeral-storage"] == 600 * 10**9
    assert to_resource_list(it.overhead)["ephemeral-storage"] == 1 * GIB + 60 * 10**9
    assert to_resource_list(to_instance_type(instance_type_info(), [], raid0).capacity)["ephemeral-storage"] == 50 * GIB
    plain = InstanceTypeSettings(root_volume_bytes=50 * GIB)
    assert to_resource_list(to_instance_type(m5d, [], plain).capacity)["ephemeral-storage"] == 50 * GIB
