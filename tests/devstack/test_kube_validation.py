"""CRD validation rules (x-kubernetes-validations) in the emulator: the CEL evaluation, the schema walk,
and the store (in process, no HTTP) with the product's CRDs (``deploy/crds``) as `kubectl apply` creates
them: invalid NodePools, EC2NodeClasses and NodeClaim updates are refused with 422 Invalid naming the field
and Karpenter's message; every manifest the repository ships is still accepted."""

from __future__ import annotations

import copy
import functools
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack.kube import catalog
from devstack.kube.cel import ABSENT, check
from devstack.kube.errors import ApiError
from devstack.kube.store import ObjectStore
from devstack.kube.validation import Violation, violations
from tests.unit.apis.builders import ec2nodeclass_doc, example_files, nodeclaim_doc, nodepool_doc

CRDS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"
DEFAULTS = Path(__file__).resolve().parents[2] / "devstack" / "src" / "devstack" / "defaults.yaml"
SERVED = {r.kind: r for r in (catalog.NODEPOOL, catalog.NODECLAIM, catalog.EC2NODECLASS)}


class TestCheck:
    def test_a_rule_that_holds_or_fails(self) -> None:
        assert check("self.size() != 0", "empty", [1]) is None
        assert check("self.size() != 0", "empty", []) == "empty"

    def test_kubernetes_string_and_regex_functions(self) -> None:
        rule = 'self.find("^([^/]+)").endsWith("karpenter.sh") && self.split("/")[1] == "x"'
        assert check(rule, "m", "sub.karpenter.sh/x") is None
        assert check(rule, "m", "example.com/x") == "m"
        assert check("self.split('@', 2).size() == 2 && self.lowerAscii() == 'a@b@c'", "m", "A@b@C") is None

    def test_a_runtime_error_is_a_failure_worded_like_the_api_server(self) -> None:
        problem = check("int(self) >= 0", "must be an integer", "x")
        assert problem is not None and problem.endswith(" evaluating rule: must be an integer")

    def test_old_self_is_bound_when_given(self) -> None:
        assert check("self == oldSelf", "immutable", {"a": 1}, {"a": 1}) is None
        assert check("self == oldSelf", "immutable", {"a": 1}, {"a": 2}) == "immutable"

    def test_a_rule_cel_python_cannot_run_is_logged_once_and_skipped(self, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.WARNING, "devstack.kube.cel")
        for _ in range(2):
            assert check("self.charAt(0) == 'a'", "m", "b") is None  # a Kubernetes function cel-python lacks
            assert check("self.(", "m", "b") is None  # does not parse
        skipped = [r for r in caplog.records if "skipped" in r.getMessage()]
        assert len(skipped) == 2


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.mode == oldSelf.mode", "message": "mode is immutable"}],
            "properties": {
                "mode": {"type": "string"},
                "tags": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "string",
                        "x-kubernetes-validations": [{"rule": "self != ''", "message": "empty"}],
                    },
                },
                "items": {
                    "type": "array",
                    "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
                },
            },
        }
    },
}


class TestViolations:
    def test_field_paths_of_properties_map_values_and_items(self) -> None:
        found = violations(SCHEMA, {"spec": {"mode": "a", "tags": {"k": ""}, "items": [1, -1]}})
        assert found == [
            Violation("spec.tags[k]", "string", "empty"),
            Violation("spec.items[1]", "integer", "failed rule: self >= 0"),
        ]
        assert found[0].detail() == 'Invalid value: "string": empty'

    def test_transition_rules_run_on_update_only(self) -> None:
        assert violations(SCHEMA, {"spec": {"mode": "b"}}) == []
        changed = violations(SCHEMA, {"spec": {"mode": "b"}}, {"spec": {"mode": "a"}})
        assert changed == [Violation("spec", "object", "mode is immutable")]

    def test_an_unchanged_value_is_not_checked_again(self) -> None:
        stored = {"spec": {"mode": "a", "tags": {"k": ""}}}
        assert violations(SCHEMA, copy.deepcopy(stored), stored) == []
        assert violations(SCHEMA, {"spec": {"mode": "a", "tags": {"k": "", "j": ""}}}, stored) == [
            Violation("spec.tags[j]", "string", "empty")
        ]

    def test_a_mistyped_value_or_no_schema_is_left_alone(self) -> None:
        assert violations(SCHEMA, {"spec": {"tags": "oops", "items": {"a": 1}}}) == []
        assert violations(None, {"spec": {}}) == []
        malformed = {"type": "object", "x-kubernetes-validations": ["self", {"message": "no rule"}, {"rule": 3}]}
        assert violations(malformed, {"spec": {}}) == []
        assert violations({"type": "object", "x-kubernetes-validations": "self"}, {}) == []
        assert check("self >= 0", "m", 1, ABSENT) is None


@functools.cache
def product_crds() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(path.read_text()) for path in sorted(CRDS_DIR.glob("*.yaml")))


def add_crds(store: ObjectStore) -> None:
    for crd in product_crds():
        store.create(catalog.CRD, None, copy.deepcopy(crd))


@pytest.fixture
def store() -> ObjectStore:
    store = ObjectStore()
    add_crds(store)
    return store


def create(store: ObjectStore, doc: dict[str, Any]) -> dict[str, Any]:
    return store.create(SERVED[doc["kind"]], None, doc)


def refused(store: ObjectStore, doc: dict[str, Any], old: dict[str, Any] | None = None) -> ApiError:
    res = SERVED[doc["kind"]]
    with pytest.raises(ApiError) as raised:
        if old is None:
            store.create(res, None, doc)
        else:
            store.update(res, None, doc["metadata"]["name"], doc)
    assert raised.value.code == 422 and raised.value.reason == "Invalid"
    return raised.value


def causes(error: ApiError) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in (error.details or {})["causes"]]


class TestNodePool:
    def test_a_budget_schedule_without_duration_is_refused_like_the_api_server_does(self, store: ObjectStore) -> None:
        pool = nodepool_doc()
        pool["spec"]["disruption"]["budgets"] = [{"nodes": "0", "schedule": "@daily"}]
        error = refused(store, pool)
        assert error.message == (
            'NodePool.karpenter.sh "default" is invalid: spec.disruption.budgets: '
            "Invalid value: \"array\": 'schedule' must be set with 'duration'"
        )
        assert causes(error) == [
            ("spec.disruption.budgets", "Invalid value: \"array\": 'schedule' must be set with 'duration'")
        ]
        assert store.find(catalog.NODEPOOL, None, "default") is None

    def test_restricted_requirement_keys_and_labels(self, store: ObjectStore) -> None:
        pool = nodepool_doc()
        pool["spec"]["template"]["spec"]["requirements"].append({"key": "kubernetes.io/hostname", "operator": "Exists"})
        pool["spec"]["template"]["metadata"]["labels"]["karpenter.sh/nodepool"] = "x"
        error = refused(store, pool)
        assert causes(error) == [
            ("spec.template.metadata.labels", 'Invalid value: "object": label "karpenter.sh/nodepool" is restricted'),
            (
                "spec.template.spec.requirements[2].key",
                'Invalid value: "string": label "kubernetes.io/hostname" is restricted',
            ),
        ]
        assert error.message.startswith('NodePool.karpenter.sh "default" is invalid: [spec.template.metadata.labels: ')

    def test_requirement_operators(self, store: ObjectStore) -> None:
        pool = nodepool_doc()
        pool["spec"]["template"]["spec"]["requirements"] = [
            {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["many"]}
        ]
        ((field, message),) = causes(refused(store, pool))
        assert field == "spec.template.spec.requirements"
        assert message.endswith("evaluating rule: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a "
                                "single positive integer value")  # fmt: skip

    def test_transition_rules_on_update(self, store: ObjectStore) -> None:
        stored = create(store, nodepool_doc())
        changed = copy.deepcopy(stored)
        changed["spec"]["template"]["spec"]["nodeClassRef"]["kind"] = "OtherNodeClass"
        changed["spec"]["replicas"] = 2
        del changed["spec"]["weight"]
        changed["spec"]["limits"] = {"nodes": "3"}
        assert causes(refused(store, changed, stored)) == [
            ("spec", 'Invalid value: "object": Cannot transition NodePool between static (replicas set) and dynamic '
                     "(replicas unset) provisioning modes"),
            ("spec.template.spec.nodeClassRef", 'Invalid value: "object": nodeClassRef.kind is immutable'),
        ]  # fmt: skip
        renamed = copy.deepcopy(stored)
        renamed["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "other"
        assert store.update(catalog.NODEPOOL, None, "default", renamed)["metadata"]["generation"] == 2

    def test_a_status_write_does_not_recheck_an_object_stored_before_its_crd(self) -> None:
        store = ObjectStore()
        pool = nodepool_doc()
        pool["spec"]["template"]["spec"]["requirements"] = [{"key": "kubernetes.io/hostname", "operator": "Exists"}]
        stored = create(store, pool)
        add_crds(store)
        status = {**stored, "status": {"nodes": 1}}
        assert store.update(catalog.NODEPOOL, None, "default", status, "status")["status"]["nodes"] == 1


class TestEC2NodeClass:
    def test_role_and_instance_profile_and_alias_rules(self, store: ObjectStore) -> None:
        nodeclass = ec2nodeclass_doc()
        nodeclass["spec"]["instanceProfile"] = "profile"
        nodeclass["spec"]["amiSelectorTerms"] = [{"alias": "windows2022@v1"}, {"id": "ami-123"}]
        assert causes(refused(store, nodeclass)) == [
            ("spec", "Invalid value: \"object\": must specify exactly one of ['role', 'instanceProfile']"),
            ("spec.amiSelectorTerms", 'Invalid value: "array": \'alias\' is mutually exclusive, cannot be set with a '
                                      "combination of other amiSelectorTerms"),
            ("spec.amiSelectorTerms[0].alias", "Invalid value: \"string\": windows families may only specify version "
                                               "'latest'"),
        ]  # fmt: skip

    def test_selector_terms_and_tags(self, store: ObjectStore) -> None:
        nodeclass = ec2nodeclass_doc()
        nodeclass["spec"]["subnetSelectorTerms"] = [{"id": "subnet-1", "tags": {"a": "b"}}, {"id": "subnet-2"}]
        nodeclass["spec"]["tags"] = {"kubernetes.io/cluster/x": "owned"}
        assert [field for field, _ in causes(refused(store, nodeclass))] == ["spec.subnetSelectorTerms", "spec.tags"]

    def test_an_alias_without_amifamily_or_amifamily_without_alias_is_accepted(self, store: ObjectStore) -> None:
        create(store, ec2nodeclass_doc())
        nodeclass = ec2nodeclass_doc()
        nodeclass["metadata"]["name"] = "family"
        nodeclass["spec"]["amiFamily"] = "AL2023"
        del nodeclass["spec"]["amiSelectorTerms"]  # nodeflow's leniency: the family's default AMIs
        create(store, nodeclass)


class TestNodeClaim:
    def test_the_spec_is_immutable_but_metadata_and_status_change(self, store: ObjectStore) -> None:
        stored = create(store, nodeclaim_doc())
        name = stored["metadata"]["name"]
        changed = copy.deepcopy(stored)
        changed["spec"]["taints"] = [{"key": "example.com/x", "effect": "NoSchedule"}]
        error = refused(store, changed, stored)
        assert (
            error.message
            == f'NodeClaim.karpenter.sh "{name}" is invalid: spec: Invalid value: "object": spec is immutable'
        )
        labelled = {**stored, "metadata": {**stored["metadata"], "labels": {"a": "b"}}}
        stored = store.update(catalog.NODECLAIM, None, name, labelled)
        status = {**stored, "status": {"nodeName": "n"}}
        assert store.update(catalog.NODECLAIM, None, name, status, "status")["status"]["nodeName"] == "n"

    def test_a_nodeclaim_may_require_its_nodepool_label(self, store: ObjectStore) -> None:
        claim = nodeclaim_doc()
        assert claim["spec"]["requirements"][0]["key"] == "karpenter.sh/nodepool"
        create(store, claim)


def shipped_manifests() -> list[dict[str, Any]]:
    """The Karpenter kinds in the dev stack's defaults.yaml and the unit tests' builders."""
    docs = [d for d in yaml.safe_load_all(DEFAULTS.read_text()) if d]
    docs += [nodepool_doc(), ec2nodeclass_doc(), nodeclaim_doc()]
    return [d for d in docs if d.get("kind") in SERVED]


def test_every_manifest_the_repository_ships_is_accepted(store: ObjectStore) -> None:
    docs = shipped_manifests()
    assert {d["kind"] for d in docs} == set(SERVED)
    for index, doc in enumerate(docs):
        doc["metadata"]["name"] = f"{doc['metadata']['name']}-{index}"
        create(store, doc)


def test_karpenters_example_manifests_are_accepted(store: ObjectStore) -> None:
    docs = [d for path in example_files() for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] in SERVED]
    assert docs
    for index, doc in enumerate(docs):
        doc["metadata"]["name"] = f"{doc['metadata']['name']}-{index}"
        create(store, doc)
