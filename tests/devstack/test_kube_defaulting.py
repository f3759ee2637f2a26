"""Structural defaulting from CRD schemas: the pure function, then the emulator over HTTP with the
product's CRDs (``deploy/crds``) created through the API, as ``kubectl apply -f deploy/crds/`` does."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack.kube.catalog import NODEPOOL as SERVED_NODEPOOL
from devstack.kube.defaulting import apply_defaults, crd_schemas
from devstack.kube.server import KubeApiServer
from kube.client import KubeClient
from kube.errors import InvalidError
from kube.resources import EC2NODECLASS, NODECLAIM, NODEPOOL, Resource

CRD = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
CRDS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "policy": {"type": "string", "default": "Always"},
                "nullable": {"type": "string", "nullable": True, "default": "x"},
                "plain": {"type": "string"},
                "box": {
                    "type": "object",
                    "default": {"size": 1},
                    "properties": {
                        "size": {"type": "integer", "default": 2},
                        "colour": {"type": "string", "default": "red"},
                    },
                },
                "parent": {
                    "type": "object",
                    "properties": {"child": {"type": "string", "default": "c"}},
                },
                "items": {
                    "type": "array",
                    "default": [{}],
                    "items": {"type": "object", "properties": {"weight": {"type": "integer", "default": 10}}},
                },
                "byName": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"on": {"type": "boolean", "default": True}},
                    },
                },
            },
        }
    },
}


def defaulted(obj: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = apply_defaults(SCHEMA, obj)
    return result


class TestApplyDefaults:
    def test_an_absent_field_gets_its_default(self) -> None:
        assert defaulted({"spec": {}})["spec"]["policy"] == "Always"

    def test_a_given_value_is_kept(self) -> None:
        spec = defaulted({"spec": {"policy": "Never", "box": {"size": 5}}})["spec"]
        assert spec["policy"] == "Never"
        assert spec["box"] == {"size": 5, "colour": "red"}

    def test_an_object_default_creates_it_and_then_its_own_defaults_apply(self) -> None:
        # the object default gives size 1 (not the inner default 2); colour comes from the inner default
        assert defaulted({"spec": {}})["spec"]["box"] == {"size": 1, "colour": "red"}

    def test_no_default_without_the_parent_object(self) -> None:
        assert "parent" not in defaulted({"spec": {}})["spec"]
        assert defaulted({"spec": {"parent": {}}})["spec"]["parent"] == {"child": "c"}
        assert defaulted({}) == {}  # spec itself has no default: nothing under it appears

    def test_array_items_are_each_defaulted(self) -> None:
        spec = defaulted({"spec": {"items": [{}, {"weight": 3}, {}]}})["spec"]
        assert spec["items"] == [{"weight": 10}, {"weight": 3}, {"weight": 10}]
        assert defaulted({"spec": {}})["spec"]["items"] == [{"weight": 10}]  # default array, then its items

    def test_additional_properties_values_are_defaulted(self) -> None:
        spec = defaulted({"spec": {"byName": {"a": {}, "b": {"on": False}}}})["spec"]
        assert spec["byName"] == {"a": {"on": True}, "b": {"on": False}}

    def test_nulls_are_defaulted_or_pruned_unless_nullable(self) -> None:
        spec = defaulted({"spec": {"policy": None, "plain": None, "nullable": None}})["spec"]
        assert spec["policy"] == "Always"  # not nullable, with a default: defaulted
        assert "plain" not in spec  # not nullable, no default: pruned
        assert spec["nullable"] is None  # nullable: kept

    def test_no_schema_leaves_the_object_unchanged(self) -> None:
        obj = {"spec": {"anything": None}}
        assert apply_defaults(None, obj) == {"spec": {"anything": None}}

    def test_values_of_the_wrong_type_are_left_alone(self) -> None:
        assert defaulted({"spec": {"box": "big", "items": "many"}})["spec"]["box"] == "big"

    def test_idempotent_and_the_input_is_not_mutated(self) -> None:
        obj: dict[str, Any] = {"spec": {"items": [{}], "box": {}}}
        before = copy.deepcopy(obj)
        once = defaulted(obj)
        assert obj == before
        assert defaulted(once) == once

    def test_defaults_are_copies(self) -> None:
        first, second = defaulted({"spec": {}}), defaulted({"spec": {}})
        first["spec"]["box"]["size"] = 99
        assert second["spec"]["box"]["size"] == 1
        assert SCHEMA["properties"]["spec"]["properties"]["box"]["default"] == {"size": 1}


def test_crd_schemas_are_keyed_like_the_served_resources() -> None:
    crd = yaml.safe_load((CRDS_DIR / "karpenter.sh_nodepools.yaml").read_text())
    schemas = crd_schemas(crd)
    assert list(schemas) == [SERVED_NODEPOOL.key]
    assert schemas[SERVED_NODEPOOL.key]["properties"]["spec"]["type"] == "object"
    assert crd_schemas({"spec": "nonsense"}) == {}


# ----- the emulator over HTTP


def minimal_nodepool(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [],
                }
            }
        },
    }


@pytest.fixture(scope="module")
def server() -> Iterator[KubeApiServer]:
    with KubeApiServer(controllers=False) as api:
        yield api


@pytest.fixture(scope="module")
def kube(server: KubeApiServer) -> Iterator[KubeClient]:
    client = KubeClient.for_url(server.url)
    before = client.create(NODEPOOL, minimal_nodepool("before-crds"))
    assert "disruption" not in before["spec"]  # no CRD yet: stored as given
    for path in sorted(CRDS_DIR.glob("*.yaml")):
        client.create(CRD, yaml.safe_load(path.read_text()))
    yield client
    client.close()


class TestEmulatorDefaults:
    def test_a_created_crd_is_established(self, kube: KubeClient) -> None:
        crd = kube.get(CRD, "nodepools.karpenter.sh")
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions == {"NamesAccepted": "True", "Established": "True"}
        assert crd["status"]["storedVersions"] == ["v1"]

    def test_a_minimal_nodepool_is_returned_and_stored_with_karpenters_defaults(
        self, kube: KubeClient, server: KubeApiServer
    ) -> None:
        created = kube.create(NODEPOOL, minimal_nodepool("minimal"))
        expected = {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "0s",
            "budgets": [{"nodes": "10%"}],
        }
        assert created["spec"]["disruption"] == expected
        assert created["spec"]["template"]["spec"]["expireAfter"] == "720h"
        assert created["metadata"]["generation"] == 1
        stored = server.call(lambda: server.emulator.store.get(SERVED_NODEPOOL, None, "minimal"))
        assert stored["spec"] == created["spec"]
        assert kube.get(NODEPOOL, "minimal") == created

    def test_given_values_are_kept(self, kube: KubeClient) -> None:
        pool = minimal_nodepool("given")
        pool["spec"]["disruption"] = {
            "consolidationPolicy": "WhenEmpty",
            "budgets": [{"nodes": "1"}, {"reasons": ["Empty"]}],
        }
        created = kube.create(NODEPOOL, pool)
        assert created["spec"]["disruption"] == {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "0s",
            "budgets": [{"nodes": "1"}, {"reasons": ["Empty"], "nodes": "10%"}],
        }

    def test_a_patch_removing_a_defaulted_field_gets_the_default_back_without_a_new_generation(
        self, kube: KubeClient
    ) -> None:
        kube.create(NODEPOOL, minimal_nodepool("patched"))
        patch = {"spec": {"disruption": {"consolidationPolicy": None, "consolidateAfter": "30s"}}}
        patched = kube.patch(NODEPOOL, "patched", patch, None, "merge")
        assert patched["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
        assert patched["spec"]["disruption"]["consolidateAfter"] == "30s"
        assert patched["metadata"]["generation"] == 2  # consolidateAfter changed; the default did not
        again = kube.patch(NODEPOOL, "patched", {"spec": {"disruption": {"consolidationPolicy": None}}}, None, "merge")
        assert again["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]  # a no-op

    def test_an_update_without_the_defaults_stores_them_again(self, kube: KubeClient) -> None:
        current = kube.create(NODEPOOL, minimal_nodepool("replaced"))
        body = minimal_nodepool("replaced")
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        body["metadata"]["labels"] = {"team": "a"}
        replaced = kube.replace(NODEPOOL, body)
        assert replaced["spec"] == current["spec"]
        assert replaced["metadata"]["generation"] == 1  # only a label changed
        assert replaced["metadata"]["labels"] == {"team": "a"}

    def test_status_writes_get_status_defaults(self, kube: KubeClient) -> None:
        current = kube.create(NODEPOOL, minimal_nodepool("status"))
        condition = {"type": "Ready", "status": "True"}
        updated = kube.replace(NODEPOOL, {**current, "status": {"conditions": [condition]}}, "status")
        assert updated["status"]["nodes"] == 0
        assert updated["status"]["conditions"] == [{**condition, "lastTransitionTime": "", "message": "", "reason": ""}]
        assert updated["spec"] == current["spec"]

    def test_an_object_stored_before_its_crd_gets_the_defaults_on_its_next_write(self, kube: KubeClient) -> None:
        patched = kube.patch(NODEPOOL, "before-crds", {"metadata": {"labels": {"x": "y"}}}, None, "merge")
        assert patched["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
        assert patched["metadata"]["generation"] == 1

    def test_other_karpenter_kinds_are_defaulted_too(self, kube: KubeClient) -> None:
        claim = kube.create(
            NODECLAIM,
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {"name": "claim"},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [],
                },
            },
        )
        assert claim["spec"]["expireAfter"] == "720h"
        nodeclass = kube.create(
            EC2NODECLASS,
            {
                "apiVersion": "karpenter.k8s.aws/v1",
                "kind": "EC2NodeClass",
                "metadata": {"name": "nc"},
                "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}]},
            },
        )
        assert nodeclass["spec"]["metadataOptions"]["httpTokens"] == "required"

    def test_deleting_the_crd_stops_the_defaulting(self, kube: KubeClient) -> None:
        kube.delete(CRD, "nodeclaims.karpenter.sh")
        claim = kube.create(
            NODECLAIM,
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {"name": "after-delete"},
                "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}},
            },
        )
        assert "expireAfter" not in claim["spec"]

    def test_validation_rules_of_the_crds_refuse_an_invalid_object_with_422(self, kube: KubeClient) -> None:
        pool = minimal_nodepool("invalid")
        pool["spec"]["disruption"] = {"budgets": [{"nodes": "1", "duration": "1h"}]}
        with pytest.raises(InvalidError) as raised:
            kube.create(NODEPOOL, pool)
        assert raised.value.status == 422
        assert (
            'NodePool.karpenter.sh "invalid" is invalid: spec.disruption.budgets: Invalid value: "array": '
            "'schedule' must be set with 'duration'" in str(raised.value)
        )
