"""How the product's CRDs reach the dev stack: `stack_config` passes `deploy/crds`, and the stack
expands directories into their manifest files as `kubectl apply -f DIR` does."""

from __future__ import annotations

from pathlib import Path

from devstack.apply import expand_paths, load_file
from workers.cli.dev import CRDS_DIR, stack_config


def test_stack_config_passes_the_repositorys_crds() -> None:
    assert CRDS_DIR.is_dir()
    assert stack_config(start_worker=False).crds == [CRDS_DIR]


def test_a_crds_setting_replaces_them(tmp_path: Path) -> None:
    assert stack_config(start_worker=False, crds=[]).crds == []
    assert stack_config(start_worker=False, crds=[str(tmp_path)]).crds == [tmp_path]


def test_directories_expand_to_their_manifests_in_name_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml", "c.json", "notes.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub.yaml").mkdir()
    single = tmp_path / "notes.txt"
    assert expand_paths([tmp_path, single]) == [tmp_path / "a.yml", tmp_path / "b.yaml", tmp_path / "c.json", single]


def test_the_product_crds_are_applicable_manifests() -> None:
    kinds = []
    for path in expand_paths([CRDS_DIR]):
        manifests, problems = load_file(path, {})
        assert problems == []
        kinds += [(m.resource.plural, m.name) for m in manifests]
    assert kinds == [
        ("customresourcedefinitions", "ec2nodeclasses.karpenter.k8s.aws"),
        ("customresourcedefinitions", "nodeclaims.karpenter.sh"),
        ("customresourcedefinitions", "nodepools.karpenter.sh"),
    ]
