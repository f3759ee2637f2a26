"""Finalizers and deletionTimestamp, on core kinds and on Karpenter custom resources."""

from __future__ import annotations

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.devstack.conftest import CoreApi, CustomApi, make_node, make_nodeclaim, unique

GROUP, VERSION, CLAIMS = "karpenter.sh", "v1", "nodeclaims"


def test_delete_with_finalizers_marks_the_object_and_bumps_its_version(custom: CustomApi) -> None:
    name = unique("claim")
    claim = make_nodeclaim(name)
    claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    created = custom.create_cluster_custom_object(GROUP, VERSION, CLAIMS, claim)
    custom.delete_cluster_custom_object(GROUP, VERSION, CLAIMS, name)
    deleting = custom.get_cluster_custom_object(GROUP, VERSION, CLAIMS, name)
    assert deleting["metadata"]["deletionTimestamp"]
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 0
    assert int(deleting["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_removing_the_last_finalizer_deletes_the_object(core: CoreApi) -> None:
    name = unique("n")
    node = make_node(name)
    node["metadata"]["finalizers"] = ["a/one", "a/two"]
    since = core.create_node(node).metadata.resource_version
    core.delete_node(name)
    core.patch_node(name, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/one"]}})
    assert core.read_node(name).metadata.finalizers == ["a/two"]
    core.patch_node(name, [{"op": "remove", "path": "/metadata/finalizers"}])
    with pytest.raises(ApiException) as caught:
        core.read_node(name)
    assert caught.value.status == 404
    events = [
        e["type"]
        for e in watch.Watch().stream(
            core.list_node, field_selector=f"metadata.name={name}", resource_version=since, timeout_seconds=1
        )
    ]
    assert events == ["MODIFIED", "MODIFIED", "DELETED"]


def test_finalizers_cannot_be_added_to_a_deleting_object(custom: CustomApi) -> None:
    name = unique("claim")
    claim = make_nodeclaim(name)
    claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    custom.create_cluster_custom_object(GROUP, VERSION, CLAIMS, claim)
    custom.delete_cluster_custom_object(GROUP, VERSION, CLAIMS, name)
    with pytest.raises(ApiException) as caught:
        custom.patch_cluster_custom_object(
            GROUP, VERSION, CLAIMS, name, {"metadata": {"finalizers": ["karpenter.sh/termination", "x/y"]}}
        )
    assert caught.value.status == 422 and "metadata.finalizers" in (caught.value.body or "")


def test_deleting_twice_changes_nothing(core: CoreApi) -> None:
    name = unique("n")
    node = make_node(name)
    node["metadata"]["finalizers"] = ["a/one"]
    core.create_node(node)
    core.delete_node(name)
    first = core.read_node(name).metadata
    core.delete_node(name)
    second = core.read_node(name).metadata
    assert (first.resource_version, first.deletion_timestamp) == (second.resource_version, second.deletion_timestamp)


def test_delete_preconditions_are_checked(core: CoreApi) -> None:
    name = unique("n")
    core.create_node(make_node(name))
    with pytest.raises(ApiException) as caught:
        core.delete_node(name, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other")))
    assert caught.value.status == 409
