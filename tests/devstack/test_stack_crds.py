"""`nodeflow dev`'s stack (the product's `stack_config`) starts with the product's CRDs applied, so
`kubectl get nodepool default -o yaml` shows Karpenter's defaults the default NodePool omits."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import yaml

from devstack.stack import DevStack, core
from devstack.stack.ports import resolve
from kube import resources as r
from workers.cli.dev import CRDS_DIR, stack_config

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture(scope="module")
def taken() -> Iterator[socket.socket]:
    """A port some other process listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, taken: socket.socket) -> Iterator[DevStack]:
    """A stack whose first port pick for the Kubernetes API emulator is taken before the emulator binds
    it (as another process can take a picked port): the stack launches it again on a new pick."""
    config = stack_config(state_dir=tmp_path_factory.mktemp("devstack-crds"), start_worker=False)
    assert config.crds == [CRDS_DIR]
    picks = iter([taken.getsockname()[1]])

    def pick_taken_first(port: int, flag: str) -> int:
        if flag == "--kube-port":
            return next(picks, None) or resolve(port, flag)
        return resolve(port, flag)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core, "resolve", pick_taken_first)
        running = DevStack(config)
        running.start()
    try:
        yield running
    finally:
        running.stop()


def test_the_emulator_is_launched_again_when_its_picked_port_was_taken(stack: DevStack, taken: socket.socket) -> None:
    assert stack.kube_url and urlsplit(stack.kube_url).port != taken.getsockname()[1]
    assert stack.kube.get(r.NODEPOOL, "default")  # moto and the emulator came up together


def test_kubectl_shows_the_default_nodepool_with_karpenters_defaults(stack: DevStack) -> None:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(stack.kubeconfig), "get", "nodepool", "default", "-o", "yaml"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    spec = yaml.safe_load(result.stdout)["spec"]
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
    }
    assert spec["template"]["spec"]["expireAfter"] == "720h"
    assert spec["limits"] == {"cpu": 1000}  # given values are kept


def test_the_crds_are_served(stack: DevStack) -> None:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(stack.kubeconfig), "get", "crds"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["NAME", "CREATED", "AT"]
    assert sorted(row.split()[0] for row in rows) == [
        "ec2nodeclasses.karpenter.k8s.aws",
        "nodeclaims.karpenter.sh",
        "nodepools.karpenter.sh",
    ]


def test_kubectl_create_of_an_invalid_nodepool_is_refused_by_the_crds_rules(stack: DevStack) -> None:
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "invalid"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [{"key": "kubernetes.io/hostname", "operator": "Exists"}],
                }
            }
        },
    }
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(stack.kubeconfig), "create", "--validate=false", "-f", "-"],
        input=yaml.safe_dump(pool), capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    # kubectl words it from the Status details (kind, name, causes), as it does with a real API server
    assert result.stderr == (
        'The NodePool "invalid" is invalid: spec.template.spec.requirements[0].key: Invalid value: "string": '
        'label "kubernetes.io/hostname" is restricted\n'
    )
