"""OptionCache: the instance-type options of a node class, kept across solves by the class's content."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from scheduling.provisioning.catalog import Option, OptionCache
from scheduling.provisioning.pools import build_pools
from tests.unit.scheduling.builders import catalog, node_pool
from tests.unit.scheduling.test_ephemeral_storage import big_root, node_class


def options(cache: OptionCache, nc: EC2NodeClass, types: list[InstanceType]) -> dict[str, Option]:
    [pool] = build_pools([node_pool()], [nc], types, [], {}, cache)
    return {o.name: o for o in pool.options}


def test_a_node_class_read_again_unchanged_reuses_the_options_built_for_it() -> None:
    cache, types = OptionCache(), catalog()
    first = options(cache, node_class(), types)
    again = options(cache, node_class(), types)  # a new object, as every read of the API makes
    assert first.keys() == again.keys()
    assert all(again[name] is first[name] for name in first)


def test_a_changed_node_class_gets_options_of_its_own() -> None:
    cache, types = OptionCache(), catalog()
    plain = options(cache, node_class(), types)
    capped = options(cache, node_class(kubelet={"maxPods": 7}), types)
    assert {o.capacity["pods"] for o in capped.values()} == {7}
    assert all(o.capacity["pods"] != 7 for o in plain.values())
    assert all(options(cache, node_class(), types)[name] is plain[name] for name in plain), "both are kept"


def test_a_new_instance_type_object_is_built_again_and_replaces_the_old_entry() -> None:
    cache, nc = OptionCache(), node_class()
    old = options(cache, nc, catalog())
    fresh_types = catalog()  # what the catalog builds when prices change: equal content, new objects
    fresh = options(cache, nc, fresh_types)
    assert all(fresh[name] is not old[name] for name in old)
    memo = cache.memo(nc)
    assert len(memo) == len(fresh_types), "one entry per type name, not one per object ever seen"
    assert all(memo[it.name][0] is it for it in fresh_types)


def test_only_the_most_recently_used_node_classes_are_kept() -> None:
    cache, types = OptionCache(max_node_classes=2), catalog()
    first = options(cache, node_class(), types)
    options(cache, big_root(), types)
    options(cache, node_class(), types)  # used again: now the most recent
    options(cache, node_class(kubelet={"maxPods": 7}), types)  # drops big_root's, the least recent
    assert all(options(cache, node_class(), types)[name] is first[name] for name in first)
    assert cache.memo(big_root()) == {}, "built again from nothing"


def test_threads_sharing_a_cache_get_the_options_a_cache_of_their_own_builds() -> None:
    cache, types = OptionCache(), catalog()
    classes = [node_class(), big_root(), node_class(kubelet={"maxPods": 7})] * 8
    with ThreadPoolExecutor(4) as pool:
        shared = list(pool.map(lambda nc: options(cache, nc, types), classes))
    for nc, got in zip(classes, shared, strict=True):
        alone = options(OptionCache(), nc, types)
        assert got.keys() == alone.keys()
        assert all(got[n].capacity == alone[n].capacity and got[n].offers == alone[n].offers for n in alone)
