"""Object bookkeeping, errors, PUT and status isolation through the official client over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.devstack.conftest import CoreApi, CustomApi, make_node, make_nodeclaim, make_pod, unique


def status_body(exc: ApiException) -> dict[str, Any]:
    return json.loads(exc.body or "{}")


class TestBookkeeping:
    def test_create_sets_uid_resource_version_timestamp_and_generation(self, core: CoreApi) -> None:
        node = core.create_node(make_node(unique("n")))
        assert node.metadata.uid and node.metadata.creation_timestamp
        assert int(node.metadata.resource_version) > 0
        assert node.metadata.generation == 1

    def test_every_write_bumps_one_global_resource_version(self, core: CoreApi) -> None:
        a = core.create_node(make_node(unique("n")))
        b = core.create_namespaced_pod("default", make_pod(unique("p")))
        patched = core.patch_node(a.metadata.name, {"metadata": {"labels": {"x": "1"}}})
        assert int(a.metadata.resource_version) < int(b.metadata.resource_version)
        assert int(b.metadata.resource_version) < int(patched.metadata.resource_version)

    def test_generate_name_gets_a_random_suffix(self, core: CoreApi) -> None:
        pod = make_pod("")
        pod["metadata"] = {"generateName": "web-", "namespace": "default"}
        created = core.create_namespaced_pod("default", pod)
        assert created.metadata.name.startswith("web-") and len(created.metadata.name) == len("web-") + 5

    def test_generation_changes_on_spec_changes_only(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name))
        labelled = core.patch_node(name, {"metadata": {"labels": {"a": "b"}}})
        assert labelled.metadata.generation == 1
        cordoned = core.patch_node(name, {"spec": {"unschedulable": True}})
        assert cordoned.metadata.generation == 2

    def test_a_new_pod_is_pending(self, core: CoreApi) -> None:
        pod = core.create_namespaced_pod("default", make_pod(unique("p")))
        assert pod.status.phase == "Pending"

    def test_list_carries_list_kind_and_items_carry_kind(self, api_client: client.ApiClient) -> None:
        core: CoreApi = client.CoreV1Api(api_client)
        core.create_node(make_node(unique("n")))
        raw = json.loads(core.list_node(_preload_content=False).data)
        assert raw["kind"] == "NodeList" and raw["apiVersion"] == "v1"
        assert all(item["kind"] == "Node" and item["apiVersion"] == "v1" for item in raw["items"])

    def test_list_pages_with_limit_and_continue(self, core: CoreApi) -> None:
        ns_name = unique("ns")
        core.create_namespace({"metadata": {"name": ns_name}})
        for i in range(5):
            core.create_namespaced_pod(ns_name, make_pod(f"p{i}", ns_name))
        first = core.list_namespaced_pod(ns_name, limit=2)
        second = core.list_namespaced_pod(ns_name, limit=2, _continue=first.metadata._continue)
        rest = core.list_namespaced_pod(ns_name, _continue=second.metadata._continue)
        names = [p.metadata.name for page in (first, second, rest) for p in page.items]
        assert names == ["p0", "p1", "p2", "p3", "p4"]

    def test_default_namespaces_exist(self, core: CoreApi) -> None:
        names = {ns.metadata.name for ns in core.list_namespace().items}
        assert {"default", "kube-system"} <= names

    def test_create_in_a_missing_namespace_is_not_found(self, core: CoreApi) -> None:
        with pytest.raises(ApiException) as caught:
            core.create_namespaced_pod("nope", make_pod("p", "nope"))
        assert caught.value.status == 404


class TestErrors:
    def test_missing_object_is_a_real_not_found_status(self, core: CoreApi) -> None:
        with pytest.raises(ApiException) as caught:
            core.read_namespaced_pod("absent", "default")
        body = status_body(caught.value)
        assert caught.value.status == 404
        assert body["reason"] == "NotFound" and body["message"] == 'pods "absent" not found'
        assert body["details"] == {"name": "absent", "kind": "pods"}

    def test_missing_custom_object_names_its_group(self, custom: CustomApi) -> None:
        with pytest.raises(ApiException) as caught:
            custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "absent")
        assert status_body(caught.value)["details"] == {"name": "absent", "kind": "nodeclaims", "group": "karpenter.sh"}

    def test_duplicate_create_is_already_exists(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name))
        with pytest.raises(ApiException) as caught:
            core.create_node(make_node(name))
        assert caught.value.status == 409 and status_body(caught.value)["reason"] == "AlreadyExists"

    def test_missing_name_is_invalid_naming_the_field(self, core: CoreApi) -> None:
        with pytest.raises(ApiException) as caught:
            core.create_node({"metadata": {}})
        assert caught.value.status == 422 and "metadata.name" in status_body(caught.value)["message"]


class TestReplace:
    def test_put_replaces_the_object(self, core: CoreApi) -> None:
        name = unique("n")
        node = core.create_node(make_node(name, a="1"))
        node.metadata.labels = {"b": "2"}
        replaced = core.replace_node(name, node)
        assert replaced.metadata.labels == {"b": "2"}

    def test_put_with_a_stale_resource_version_is_a_conflict(self, core: CoreApi) -> None:
        name = unique("n")
        stale = core.create_node(make_node(name))
        core.patch_node(name, {"metadata": {"labels": {"x": "y"}}})
        with pytest.raises(ApiException) as caught:
            core.replace_node(name, stale)
        body = status_body(caught.value)
        assert caught.value.status == 409 and body["reason"] == "Conflict"
        assert "the object has been modified" in body["message"]

    def test_patch_carrying_a_stale_resource_version_is_a_conflict(self, core: CoreApi) -> None:
        name = unique("n")
        stale_rv = core.create_node(make_node(name)).metadata.resource_version
        core.patch_node(name, {"metadata": {"labels": {"x": "y"}}})
        with pytest.raises(ApiException) as caught:
            core.patch_node(name, {"metadata": {"resourceVersion": stale_rv, "labels": {"x": "z"}}})
        assert caught.value.status == 409

    def test_patch_carrying_the_current_resource_version_applies(self, core: CoreApi) -> None:
        name = unique("n")
        rv = core.create_node(make_node(name)).metadata.resource_version
        patched = core.patch_node(name, {"metadata": {"resourceVersion": rv, "labels": {"x": "z"}}})
        assert patched.metadata.labels == {"x": "z"}

    def test_put_status_replaces_status(self, core: CoreApi) -> None:
        name = unique("n")
        node = core.create_node(make_node(name))
        node.status = client.V1NodeStatus(phase="Running")
        assert core.replace_node_status(name, node).status.phase == "Running"

    def test_a_no_op_write_keeps_the_resource_version(self, core: CoreApi) -> None:
        name = unique("n")
        rv = core.create_node(make_node(name, a="1")).metadata.resource_version
        assert core.patch_node(name, {"metadata": {"labels": {"a": "1"}}}).metadata.resource_version == rv


class TestStatusIsolation:
    def test_status_writes_change_only_status(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name, a="1"))
        patch = {
            "metadata": {"labels": {"a": "2"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
        node = core.patch_node_status(name, patch)
        assert node.metadata.labels == {"a": "1"} and not node.spec.unschedulable
        assert node.status.conditions[0].type == "Ready"

    def test_main_endpoint_writes_do_not_change_status(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name))
        core.patch_node_status(name, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        node = core.patch_node(name, {"spec": {"unschedulable": True}, "status": {"conditions": []}})
        assert node.spec.unschedulable and node.status.conditions[0].type == "Ready"

    def test_custom_resource_status_is_isolated_and_dropped_on_create(self, custom: CustomApi) -> None:
        name = unique("claim")
        claim = make_nodeclaim(name)
        claim["status"] = {"providerID": "aws:///us-west-2a/i-1"}
        created = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)
        assert "status" not in created
        custom.patch_cluster_custom_object_status(
            "karpenter.sh", "v1", "nodeclaims", name, {"status": {"nodeName": "n1"}, "spec": {"taints": []}}
        )
        got = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
        assert got["status"] == {"nodeName": "n1"} and got["spec"]["requirements"] == []
        assert "taints" not in got["spec"]
