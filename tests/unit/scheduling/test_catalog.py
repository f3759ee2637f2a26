"""Instance types under a node class: derived labels, kubelet settings, offerings."""

from __future__ import annotations

import pytest

from apis.ec2nodeclass import KubeletConfiguration
from scheduling.provisioning.catalog import build_options, derived_labels, kubelet_capacity_and_overhead
from tests.unit.scheduling.builders import instance_type

MIB = 2**20


def test_labels_are_derived_from_the_name_and_capacity() -> None:
    it = instance_type("m5d.2xlarge", 8, 32, 0.5)
    labels = derived_labels(it, {"cpu": 8000, "memory": 32 * 1024 * MIB})
    assert labels["karpenter.k8s.aws/instance-family"] == "m5d"
    assert labels["karpenter.k8s.aws/instance-category"] == "m"
    assert labels["karpenter.k8s.aws/instance-generation"] == "5"
    assert labels["karpenter.k8s.aws/instance-size"] == "2xlarge"
    assert labels["karpenter.k8s.aws/instance-cpu"] == "8"
    assert labels["karpenter.k8s.aws/instance-memory"] == "32768"
    assert labels["node.kubernetes.io/instance-type"] == "m5d.2xlarge"
    assert labels["kubernetes.io/arch"] == "amd64"


def test_catalog_labels_win_over_derived_ones() -> None:
    it = instance_type("m6g.large", 2, 8, 0.1, labels={"kubernetes.io/arch": "arm64"})
    assert derived_labels(it, {})["kubernetes.io/arch"] == "arm64"


@pytest.mark.parametrize(
    ("kubelet", "pods", "memory_overhead_mib"),
    [
        (None, 35, 0),  # the catalog's own numbers stand
        ({"maxPods": 20}, 20, 11 * 20 + 255 + 100),
        ({"podsPerCore": 4}, 8, 11 * 8 + 255 + 100),
        ({"maxPods": 20, "kubeReserved": {"memory": "1Gi"}}, 20, 1024 + 100),
        ({"maxPods": 20, "systemReserved": {"memory": "100Mi"}, "evictionHard": {"memory.available": "200Mi"}},
         20, 11 * 20 + 255 + 100 + 200),
    ],
)  # fmt: skip
def test_kubelet_settings_change_pods_and_overhead(
    kubelet: dict[str, object] | None, pods: int, memory_overhead_mib: int
) -> None:
    it = instance_type("t3.large", 2, 8, 0.08, pods=35)
    config = KubeletConfiguration.model_validate(kubelet) if kubelet else None
    capacity, overhead = kubelet_capacity_and_overhead(it, config)
    assert capacity["pods"] == pods
    assert overhead.get("memory", 0) == memory_overhead_mib * MIB


def test_unavailable_offerings_and_zones_outside_the_node_class_are_dropped() -> None:
    it = instance_type("m5.large", 2, 8, 0.1, spot=False, unavailable=("us-west-2a",))
    [option] = build_options([it], zones=frozenset({"us-west-2a", "us-west-2b"}))
    assert [o.zone for o in option.offers] == ["us-west-2b"]
    assert build_options([it], zones=frozenset({"us-west-2a"})) == []


def test_windows_node_classes_launch_windows_amd64_nodes() -> None:
    from scheduling.provisioning.catalog import node_class_os
    from tests.unit.scheduling.builders import node_class

    windows = node_class()
    windows.spec.ami_selector_terms[0].alias = "windows2022@latest"
    os_labels = node_class_os(windows)
    assert os_labels == ("windows", "10.0.20348")
    arm = instance_type("m6g.large", 2, 8, 0.1, labels={"kubernetes.io/arch": "arm64"})
    amd = instance_type("m5.large", 2, 8, 0.1, labels={"kubernetes.io/os": "linux"})
    [option] = build_options([arm, amd], os_labels=os_labels)
    assert option.name == "m5.large" and option.labels["kubernetes.io/os"] == "windows"
    assert node_class_os(node_class()) == ("linux", None)


def test_a_catalog_entry_without_pods_gets_the_kubelet_default() -> None:
    from apis.instancetype import InstanceType

    it = InstanceType.model_validate({"name": "x.large", "capacity": {"cpu": "2", "memory": "4Gi"},
                                      "offerings": [{"zone": "z", "price": 0.1}]})  # fmt: skip
    capacity, _ = kubelet_capacity_and_overhead(it, None)
    assert capacity["pods"] == 110
