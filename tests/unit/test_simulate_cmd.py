"""`nodeflow simulate`: the CLI on files, and every Karpenter example NodePool with its workloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.unit.scheduling.builders import catalog
from workers.cli import main

EXAMPLES = Path("/work/shared/karpenter-reference/karpenter-examples")
NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-${CLUSTER_NAME}
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}}]
  amiSelectorTerms: [{alias: al2023@latest}]
"""
DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump([it.model_dump(mode="json", by_alias=True) for it in catalog()]))
    return path


def simulate(tmp_path: Path, catalog_file: Path, *texts: str, extra: tuple[str, ...] = ()) -> list[str]:
    args = ["simulate", "--instance-types", str(catalog_file), "-o", "json", *extra]
    for index, text in enumerate(texts):
        path = tmp_path / f"m{index}.yaml"
        path.write_text(text)
        args += ["-f", str(path)]
    return args


def test_json_plan(tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(simulate(tmp_path, catalog_file, NODEPOOL, DEPLOYMENT)) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(p for c in out["nodeClaims"] for p in c["pods"]) == [
        "default/web-0",
        "default/web-1",
        "default/web-2",
    ]
    assert out["unschedulable"] == [] and out["errors"] == []
    assert out["nodeClaims"][0]["price"] > 0


def test_invalid_object_reported_rest_simulated(
    tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = NODEPOOL.replace(
        "metadata: {name: default}\nspec:\n  template", "metadata: {name: bad}\nspec:\n  weight: 500\n  template", 1
    )
    assert main(simulate(tmp_path, catalog_file, NODEPOOL, bad.split("---")[0], DEPLOYMENT)) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert any('NodePool "bad": spec.weight' in e for e in out["errors"])
    assert 'NodePool "bad": spec.weight' in captured.err
    assert len(out["nodeClaims"]) >= 1


def test_table_output_and_unreadable_file(
    tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = simulate(tmp_path, catalog_file, NODEPOOL, DEPLOYMENT)
    args[args.index("json")] = "table"
    assert main(args) == 0
    assert "NEW NODECLAIMS" in capsys.readouterr().out
    assert main(["simulate", "--instance-types", str(catalog_file), "-f", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def _scaled(path: Path, replicas: int = 3) -> str:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for doc in docs:
        if doc.get("kind") in ("Deployment", "StatefulSet", "ReplicaSet"):
            doc["spec"]["replicas"] = replicas
    return yaml.safe_dump_all(docs)


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="Karpenter examples not present")
def test_every_example_nodepool_with_every_workload(
    tmp_path: Path, catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = "".join("---\n" + _scaled(p) for p in sorted((EXAMPLES / "workloads").glob("*.yaml")))
    for example in sorted(EXAMPLES.glob("*.yaml")):
        assert main(simulate(tmp_path, catalog_file, example.read_text(), workloads)) == 0, example.name
        out = json.loads(capsys.readouterr().out)
        placed = [p for c in out["nodeClaims"] for p in c["pods"]]
        assert placed or out["unschedulable"], example.name
        for pending in out["unschedulable"]:
            assert pending["reason"], (example.name, pending)


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="Karpenter examples not present")
def test_builtin_catalog_is_the_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(_scaled(EXAMPLES / "workloads" / "spread-zone.yaml"))
    args = ["simulate", "-f", str(EXAMPLES / "general-purpose.yaml"), "-f", str(workload), "-o", "json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    zones = {r["values"][0] for c in out["nodeClaims"] for r in c["requirements"] if r["key"].endswith("/zone")}
    assert len(zones) == 3 and not out["unschedulable"]
