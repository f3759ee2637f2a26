"""The solver sizes ephemeral storage by the node class: its kubelet volume, or the RAID0 instance store."""

from __future__ import annotations

from typing import Any

from apis import labels as L
from apis.ec2nodeclass import EC2NodeClass
from scheduling.provisioning.pools import build_pools
from tests.unit.scheduling.builders import catalog, instance_type, node_pool, placement, pod, schedule

GIB = 2**30


def node_class(alias: str = "al2023@latest", **spec: Any) -> EC2NodeClass:
    body = {
        "role": "KarpenterNodeRole",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "amiSelectorTerms": [{"alias": alias}],
        **spec,
    }
    return EC2NodeClass.model_validate({"metadata": {"name": "default"}, "spec": body})


def big_root() -> EC2NodeClass:
    mapping = {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi", "volumeType": "gp3"}}
    return node_class(blockDeviceMappings=[mapping])


def storage(nc: EC2NodeClass, types: Any = None) -> dict[str, tuple[int, int]]:
    """instance type -> (capacity, allocatable) ephemeral storage of the default pool's options."""
    [pool] = build_pools([node_pool()], [nc], types or catalog(), [], {})
    return {o.name: (o.capacity["ephemeral-storage"], o.allocatable["ephemeral-storage"]) for o in pool.options}


def test_a_100gi_root_volume_fits_a_pod_the_default_20gi_cannot() -> None:
    wants = pod("scratch", requests={"ephemeral-storage": "80Gi"})
    assert placement(schedule([wants], node_classes=[node_class()])) == {"default/scratch": "pending"}
    plan = schedule([wants], node_classes=[big_root()])
    assert placement(plan) == {"default/scratch": "claim-0"}
    [claim] = plan.node_claims
    assert claim.requests["ephemeral-storage"] == "80Gi"
    options = storage(big_root())
    assert claim.instance_types and all(options[name] == (100 * GIB, 89 * GIB) for name in claim.instance_types)


def test_the_default_keeps_back_kube_reserved_and_the_eviction_threshold() -> None:
    assert set(storage(node_class()).values()) == {(20 * GIB, 20 * GIB - 1 * GIB - 2 * GIB)}


def test_bottlerocket_counts_its_20gi_data_volume() -> None:
    assert set(storage(node_class("bottlerocket@latest")).values()) == {(20 * GIB, 17 * GIB)}


def test_raid0_gives_types_with_an_instance_store_its_whole_size() -> None:
    nvme = instance_type("m5d.large", 2, 8, 0.113, labels={L.INSTANCE_LOCAL_NVME: "600"})
    types = [nvme, instance_type("m5.large", 2, 8, 0.096)]
    raid0 = node_class(instanceStorePolicy="RAID0")
    options = storage(raid0, types)
    assert options["m5d.large"][0] == 600 * 10**9
    assert options["m5d.large"][1] == 600 * 10**9 - GIB - 60 * 10**9
    assert options["m5.large"] == (20 * GIB, 17 * GIB)
    assert storage(node_class(), types)["m5d.large"] == (20 * GIB, 17 * GIB)
    wants = pod("scratch", requests={"ephemeral-storage": "500G"})
    plan = schedule([wants], node_classes=[raid0], instance_types=types)
    [claim] = plan.node_claims
    assert claim.instance_types == ["m5d.large"]
    assert placement(schedule([wants], node_classes=[node_class()], instance_types=types)) == {
        "default/scratch": "pending"
    }


def test_the_node_class_volume_is_read_once_per_local_nvme_size() -> None:
    from scheduling.provisioning.catalog import node_class_storage

    raid0, known = node_class(instanceStorePolicy="RAID0"), {}
    types = [instance_type(f"m5d.{n}", 2, 8, 0.1, labels={L.INSTANCE_LOCAL_NVME: "600"}) for n in ("a", "b")]
    types.append(instance_type("m5.large", 2, 8, 0.096))
    remembered = [node_class_storage(it, raid0, {}, {}, known) for it in types]
    assert remembered == [node_class_storage(it, raid0, {}, {}) for it in types]
    assert set(known) == {600, None}


def test_an_option_cache_builds_each_type_once_per_node_class_and_changes_nothing() -> None:
    from scheduling.provisioning.catalog import OptionCache

    types = catalog()
    cache = OptionCache()
    [first] = build_pools([node_pool()], [big_root()], types, [], {})
    nc = big_root()
    [cached] = build_pools([node_pool()], [nc], types, [], {}, cache)
    [again] = build_pools([node_pool()], [nc], types[:3], [], {}, cache)  # a subset, as split consolidation asks
    by_name = {o.name: o for o in cached.options}
    assert [o.name for o in cached.options] == [o.name for o in first.options]
    assert all(o.capacity == by_name[o.name].capacity for o in first.options)
    assert all(o is by_name[o.name] for o in again.options), "the subset reuses what was built"
    [other] = build_pools([node_pool()], [node_class()], types, [], {}, cache)  # another class: its own options
    assert {o.capacity["ephemeral-storage"] for o in other.options} == {20 * GIB}
