"""Merge patch, JSON patch and strategic merge patch, over HTTP and as pure functions."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from devstack.kube.errors import ApiError
from devstack.kube.patches import json_patch, merge_patch
from devstack.kube.server import KubeApiServer
from devstack.kube.strategic_merge import strategic_merge
from tests.devstack.conftest import CoreApi, CustomApi, make_node, make_nodeclaim, make_pod, raw_request, unique


def condition(kind: str, status: str) -> dict[str, str]:
    return {"type": kind, "status": status}


class TestStrategicMergeOverHttp:
    def test_conditions_merge_by_type(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name))
        core.patch_node_status(name, {"status": {"conditions": [condition("Ready", "False")]}})
        core.patch_node_status(name, {"status": {"conditions": [condition("MemoryPressure", "False")]}})
        node = core.patch_node_status(name, {"status": {"conditions": [condition("Ready", "True")]}})
        assert [(c.type, c.status) for c in node.status.conditions] == [("Ready", "True"), ("MemoryPressure", "False")]

    def test_finalizers_merge_as_a_set_and_delete_from_primitive_list(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name))
        core.patch_node(name, {"metadata": {"finalizers": ["a/one"]}})
        node = core.patch_node(name, {"metadata": {"finalizers": ["a/two", "a/one"]}})
        assert node.metadata.finalizers == ["a/one", "a/two"]
        node = core.patch_node(name, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/one"]}})
        assert node.metadata.finalizers == ["a/two"]

    def test_taints_are_atomic_like_the_real_node_spec(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name))
        core.patch_node(name, {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}})
        node = core.patch_node(name, {"spec": {"taints": [{"key": "b", "effect": "NoSchedule"}]}})
        assert [t.key for t in node.spec.taints] == ["b"]

    def test_addresses_merge_by_type_and_patch_delete_removes(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name))
        core.patch_node_status(name, {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}})
        core.patch_node_status(name, {"status": {"addresses": [{"type": "Hostname", "address": "h"}]}})
        node = core.patch_node_status(name, {"status": {"addresses": [{"type": "InternalIP", "$patch": "delete"}]}})
        assert [(a.type, a.address) for a in node.status.addresses] == [("Hostname", "h")]

    def test_containers_merge_by_name(self, core: CoreApi) -> None:
        name = unique("p")
        core.create_namespaced_pod("default", make_pod(name))
        pod = core.patch_namespaced_pod(name, "default", {"spec": {"containers": [{"name": "app", "image": "nginx"}]}})
        assert [(c.name, c.image) for c in pod.spec.containers] == [("app", "nginx")]

    def test_strategic_merge_on_custom_resources_is_unsupported_media_type(
        self, api_server: KubeApiServer, custom: CustomApi
    ) -> None:
        name = unique("claim")
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", make_nodeclaim(name))
        code, body = raw_request(
            api_server.url,
            "PATCH",
            f"/apis/karpenter.sh/v1/nodeclaims/{name}",
            {"metadata": {"labels": {"a": "b"}}},
            "application/strategic-merge-patch+json",
        )
        assert (code, body["reason"]) == (415, "UnsupportedMediaType")


class TestMergeAndJsonPatchOverHttp:
    def test_merge_patch_replaces_lists_and_null_deletes(self, custom: CustomApi) -> None:
        name = unique("claim")
        claim = make_nodeclaim(name, a="1", b="2")
        claim["spec"]["taints"] = [{"key": "x", "effect": "NoSchedule"}]
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)
        patched = custom.patch_cluster_custom_object(
            "karpenter.sh",
            "v1",
            "nodeclaims",
            name,
            {"metadata": {"labels": {"a": None}}, "spec": {"taints": [{"key": "y", "effect": "NoExecute"}]}},
        )
        assert patched["metadata"]["labels"] == {"b": "2"}
        assert patched["spec"]["taints"] == [{"key": "y", "effect": "NoExecute"}]

    def test_json_patch_applies_operations_in_order(self, core: CoreApi) -> None:
        name = unique("n")
        core.create_node(make_node(name, a="1"))
        node = core.patch_node(name, [
            {"op": "test", "path": "/metadata/labels/a", "value": "1"},
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "remove", "path": "/metadata/labels/a"},
        ])  # fmt: skip
        assert node.metadata.labels == {"b": "2"}

    def test_a_failed_json_patch_test_changes_nothing(self, core: CoreApi) -> None:
        name = unique("n")
        rv = core.create_node(make_node(name, a="1")).metadata.resource_version
        with pytest.raises(ApiException) as caught:
            core.patch_node(
                name,
                [
                    {"op": "test", "path": "/metadata/labels/a", "value": "2"},
                    {"op": "remove", "path": "/metadata/labels/a"},
                ],
            )
        assert caught.value.status == 422
        assert core.read_node(name).metadata.resource_version == rv


class TestPureFunctions:
    def test_owner_references_merge_by_uid(self) -> None:
        original = {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}
        patched = strategic_merge(original, {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}})
        assert [r["uid"] for r in patched["metadata"]["ownerReferences"]] == ["1", "2"]

    def test_patch_replace_directive_replaces_a_merged_list(self) -> None:
        original = {"status": {"conditions": [condition("A", "True"), condition("B", "True")]}}
        patch = {"status": {"conditions": [{"$patch": "replace"}, condition("C", "True")]}}
        assert strategic_merge(original, patch)["status"]["conditions"] == [condition("C", "True")]

    def test_set_element_order_is_honoured_and_stripped(self) -> None:
        original = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
        patch = {
            "spec": {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "x"}],
            }
        }
        assert strategic_merge(original, patch) == {
            "spec": {"containers": [{"name": "b"}, {"name": "a", "image": "x"}]}
        }

    def test_a_merge_list_item_without_its_key_is_a_clear_error(self) -> None:
        with pytest.raises(ApiError, match="merge key 'type'"):
            strategic_merge({}, {"status": {"conditions": [{"status": "True"}]}})

    def test_directives_in_an_atomic_list_are_refused(self) -> None:
        with pytest.raises(ApiError, match="atomic list"):
            strategic_merge({}, {"spec": {"taints": [{"key": "a", "$patch": "delete"}]}})

    def test_inputs_are_not_modified(self) -> None:
        original = {"metadata": {"labels": {"a": "1"}}}
        merge_patch(original, {"metadata": {"labels": {"a": None}}})
        json_patch(original, [{"op": "remove", "path": "/metadata/labels/a"}])
        strategic_merge(original, {"metadata": {"labels": {"a": None}}})
        assert original == {"metadata": {"labels": {"a": "1"}}}

    def test_json_patch_escapes_and_append(self) -> None:
        doc = {"metadata": {"labels": {}}, "items": [1]}
        out = json_patch(
            doc,
            [
                {"op": "add", "path": "/metadata/labels/a~1b", "value": "x"},
                {"op": "add", "path": "/items/-", "value": 2},
            ],
        )
        assert out == {"metadata": {"labels": {"a/b": "x"}}, "items": [1, 2]}
