"""Manifest loading for the dev stack: substitution, parsing, validation, create-or-patch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import devstack
from devstack.apply import ManifestError, apply_all, apply_manifest, load_file, load_text
from kube.errors import AlreadyExistsError, InvalidError
from kube.resources import DEPLOYMENT, NODEPOOL, Resource

VARS = {"CLUSTER_NAME": "demo"}
DEFAULTS = Path(devstack.__file__).parent / "defaults.yaml"

NODEPOOL_YAML = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: pool}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: %s
"""


def test_the_cluster_name_is_substituted() -> None:
    (manifest,), problems = load_text("apiVersion: v1\nkind: Node\nmetadata: {name: n-${CLUSTER_NAME}}\n", "n", VARS)
    assert manifest.name == "n-demo" and problems == []


def test_an_unset_variable_is_an_error_at_its_line() -> None:
    with pytest.raises(ManifestError, match=r"f.yaml:3: \$\{AWS_ACCOUNT_ID\} is not set"):
        load_text("apiVersion: v1\nkind: Node\nmetadata: {name: ${AWS_ACCOUNT_ID}}\n", "f.yaml", VARS)


def test_defaults_are_a_valid_ec2nodeclass_then_nodepool() -> None:
    manifests, problems = load_file(DEFAULTS, {"CLUSTER_NAME": "demo"})
    assert problems == []
    assert [(m.resource.kind, m.name) for m in manifests] == [("EC2NodeClass", "default"), ("NodePool", "default")]
    nodeclass, nodepool = (m.obj for m in manifests)
    assert nodeclass["spec"]["role"] == "KarpenterNodeRole-demo"
    assert nodeclass["spec"]["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo"}}]
    assert nodeclass["spec"]["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo"}}]
    assert nodeclass["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert nodepool["spec"]["limits"] == {"cpu": 1000}
    assert nodepool["spec"]["template"]["spec"]["expireAfter"] == "720h"
    template = nodepool["spec"]["template"]["spec"]
    requirements = {r["key"]: (r["operator"], r["values"]) for r in template["requirements"]}
    assert requirements == {
        "kubernetes.io/arch": ("In", ["amd64"]),
        "kubernetes.io/os": ("In", ["linux"]),
        "karpenter.sh/capacity-type": ("In", ["on-demand"]),
        "karpenter.k8s.aws/instance-category": ("In", ["c", "m", "r"]),
        "karpenter.k8s.aws/instance-generation": ("Gt", ["2"]),
    }


def test_an_invalid_nodepool_is_reported_but_still_loaded() -> None:
    manifests, problems = load_text(NODEPOOL_YAML % "soon", "pool.yaml", {})
    assert len(manifests) == 1
    assert len(problems) == 1
    assert problems[0].startswith('pool.yaml#0: NodePool "pool": spec.template.spec.expireAfter')


def test_a_valid_nodepool_has_no_problems() -> None:
    assert load_text(NODEPOOL_YAML % "24h", "pool.yaml", {})[1] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [", "invalid YAML"),
        ("- 1\n- 2\n", "expected a Kubernetes object"),
        ("kind: Pod\nmetadata: {name: p}\n", "set both apiVersion and kind"),
        ("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", "does not serve v1 Secret"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {}\n", "needs metadata.name"),
    ],
)
def test_unappliable_documents_raise_a_manifest_error(text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_text(text, "f.yaml", VARS)


def test_a_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="cannot read the file"):
        load_file(tmp_path / "nope.yaml", {})


class RecordingKube:
    """Just enough of kube.types.Kube for create-or-patch."""

    def __init__(self, existing: set[str]) -> None:
        self.existing = existing
        self.calls: list[tuple[str, str, str | None, Any]] = []

    def create(self, resource: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("create", resource.kind, namespace, obj))
        if obj["metadata"]["name"] in self.existing:
            raise AlreadyExistsError("exists")
        if obj["metadata"]["name"] == "invalid":
            raise InvalidError('NodePool.karpenter.sh "invalid" is invalid: spec: Invalid value: "object": no')
        return obj

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None,
              patch_type: str = "merge", subresource: str | None = None) -> dict[str, Any]:  # fmt: skip
        self.calls.append((f"patch-{patch_type}", resource.kind, namespace, patch))
        return dict(patch)


def test_apply_creates_namespaced_objects_in_default() -> None:
    kube = RecordingKube(set())
    (manifest,) = load_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n", "d.yaml", VARS)[0]
    assert manifest.resource == DEPLOYMENT
    apply_manifest(kube, manifest)  # type: ignore[arg-type]
    assert kube.calls[0][:3] == ("create", "Deployment", "default")
    assert kube.calls[0][3]["metadata"]["namespace"] == "default"


def test_apply_merge_patches_an_existing_object_without_its_resource_version() -> None:
    kube = RecordingKube({"pool"})
    text = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: pool, resourceVersion: '7'}\nspec: {}\n"
    (manifest,) = load_text(text, "p", VARS)[0]
    assert manifest.resource == NODEPOOL
    apply_manifest(kube, manifest)  # type: ignore[arg-type]
    assert [c[:3] for c in kube.calls] == [("create", "NodePool", None), ("patch-merge", "NodePool", None)]
    assert kube.calls[1][3]["metadata"] == {"name": "pool"}


def test_apply_all_reports_what_the_api_server_refuses_and_applies_the_rest() -> None:
    kube = RecordingKube(set())
    text = "".join(
        f"---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec: {{}}\n"
        for name in ("invalid", "good")
    )
    manifests = load_text(text, "p.yaml", VARS)[0]
    refused = apply_all(kube, manifests)  # type: ignore[arg-type]
    assert refused == [
        'p.yaml#0: refused by the API server: NodePool.karpenter.sh "invalid" is invalid: spec: Invalid value: '
        '"object": no'
    ]
    assert [c[3]["metadata"]["name"] for c in kube.calls] == ["invalid", "good"]
