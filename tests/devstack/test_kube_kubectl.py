"""kubectl v1.32 against the emulator: apply, get (tables, -o wide/yaml, -A, short names), describe,
label/annotate/taint/cordon, delete with a finalizer, scale, drain, get --watch."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import textwrap
from collections.abc import Callable

import pytest

from devstack.kube.kubeconfig import write_kubeconfig
from devstack.kube.server import KubeApiServer
from tests.devstack.conftest import CoreApi, CustomApi, eventually_items, make_node, unique

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
Kubectl = Callable[..., str]
pytestmark = pytest.mark.skipif(not pathlib.Path(KUBECTL).exists(), reason="kubectl is not installed")


@pytest.fixture(scope="module")
def kubeconfig(api_server: KubeApiServer, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("kube") / "config"
    write_kubeconfig(path, api_server.url)
    return path


@pytest.fixture
def kubectl(kubeconfig: pathlib.Path, tmp_path: pathlib.Path) -> Kubectl:
    """Run kubectl with the emulator's kubeconfig; returns stdout, fails the test on a non-zero exit."""

    def run(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=20,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)} failed: {done.stderr}"
        return done.stdout

    return run


MANIFESTS = textwrap.dedent("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: NAME, namespace: default}
    spec:
      replicas: 2
      selector: {matchLabels: {app: NAME}}
      template:
        metadata: {labels: {app: NAME}}
        spec: {containers: [{name: app, image: nginx}]}
    ---
    apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: NAME}
    spec:
      template:
        spec:
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: NAME}
          requirements: []
    ---
    apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: {name: NAME}
    spec: {role: RoleA}
    """)


def test_apply_creates_then_configures(kubectl: Kubectl, core: CoreApi, custom: CustomApi) -> None:
    name = unique("app")
    manifests = MANIFESTS.replace("NAME", name)
    created = kubectl("apply", "--validate=false", "-f", "-", stdin=manifests)
    assert f"deployment.apps/{name} created" in created and f"nodepool.karpenter.sh/{name} created" in created
    changed = manifests.replace("replicas: 2", "replicas: 3").replace("RoleA", "RoleB")
    configured = kubectl("apply", "--validate=false", "-f", "-", stdin=changed)
    assert f"deployment.apps/{name} configured" in configured
    assert f"ec2nodeclass.karpenter.k8s.aws/{name} configured" in configured
    assert f"nodepool.karpenter.sh/{name} unchanged" in configured
    eventually_items(lambda: core.list_namespaced_pod("default", label_selector=f"app={name}").items, 3)
    assert custom.get_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", name)["spec"] == {
        "role": "RoleB"
    }
    listed = kubectl("get", "nodepools,nodeclaims,ec2nodeclasses")
    assert f"nodepool.karpenter.sh/{name}" in listed and f"ec2nodeclass.karpenter.k8s.aws/{name}" in listed
    assert name in kubectl("get", "karpenter")
    assert "READY   UP-TO-DATE   AVAILABLE" in kubectl("get", "deploy", name)


def test_get_tables_short_names_and_output_formats(kubectl: Kubectl, core: CoreApi) -> None:
    node = unique("n")
    core.create_node(make_node(node))
    core.create_namespaced_pod("kube-system", {"metadata": {"name": node}, "spec": {
        "nodeName": node, "containers": [{"name": "c", "image": "i"}]}})  # fmt: skip
    wide = kubectl("get", "po", "-n", "kube-system", "-o", "wide")
    assert "NODE" in wide.splitlines()[0] and node in wide
    assert "NAMESPACE" in kubectl("get", "pods", "-A").splitlines()[0]
    assert f"name: {node}" in kubectl("get", "no", node, "-o", "yaml")
    assert node in kubectl("get", "nodes", "-l", "kubernetes.io/hostname!=x")
    assert "default" in kubectl("get", "ns")


def test_describe_pod_node_and_nodeclaim(kubectl: Kubectl, core: CoreApi, custom: CustomApi) -> None:
    node = unique("n")
    core.create_node(make_node(node, zone="a"))
    core.create_namespaced_pod("default", {"metadata": {"name": node}, "spec": {
        "nodeName": node, "containers": [{"name": "c", "image": "i"}]}})  # fmt: skip
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": node},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "x"},
                 "requirements": []}})  # fmt: skip
    assert f"Node:         {node}" in kubectl("describe", "pod", node)
    described_node = kubectl("describe", "node", node)
    assert "zone=a" in described_node and f"default                     {node}" in described_node
    assert "Kind:         NodeClaim" in kubectl("describe", "nodeclaim", node)


def test_label_annotate_taint_and_cordon(kubectl: Kubectl, core: CoreApi) -> None:
    node = unique("n")
    core.create_node(make_node(node))
    kubectl("label", "node", node, "role=edge")
    kubectl("annotate", "node", node, "note=hello")
    kubectl("taint", "node", node, "a=1:NoSchedule")
    kubectl("taint", "node", node, "b=2:NoExecute")
    kubectl("taint", "node", node, "a:NoSchedule-")
    kubectl("cordon", node)
    got = core.read_node(node)
    assert got.metadata.labels == {"role": "edge"} and got.metadata.annotations == {"note": "hello"}
    assert [(t.key, t.effect) for t in got.spec.taints] == [("b", "NoExecute")]
    assert got.spec.unschedulable
    assert "SchedulingDisabled" in kubectl("get", "node", node)


def test_delete_of_a_custom_resource_with_a_finalizer_waits(kubectl: Kubectl, custom: CustomApi) -> None:
    name = unique("claim")
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "finalizers": ["karpenter.sh/termination"]},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "x"},
                 "requirements": []}})  # fmt: skip
    assert f'nodeclaim.karpenter.sh "{name}" deleted' in kubectl("delete", "nodeclaim", name, "--wait=false")
    claim = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
    assert claim["metadata"]["deletionTimestamp"]


def test_scale_and_drain(kubectl: Kubectl, core: CoreApi) -> None:
    name, node = unique("app"), unique("n")
    kubectl("apply", "--validate=false", "-f", "-", stdin=MANIFESTS.replace("NAME", name))
    kubectl("scale", "deploy", name, "--replicas=1")
    pods = eventually_items(lambda: core.list_namespaced_pod("default", label_selector=f"app={name}").items, 1)
    core.create_node(make_node(node))
    core.create_namespaced_pod_binding(pods[0].metadata.name, "default", {
        "metadata": {"name": pods[0].metadata.name}, "target": {"kind": "Node", "name": node}},
        _preload_content=False)  # fmt: skip
    assert f"node/{node} drained" in kubectl("drain", node, "--ignore-daemonsets", "--timeout=10s")


def test_get_watch_streams_changes(kubeconfig: pathlib.Path, core: CoreApi, tmp_path: pathlib.Path) -> None:
    name = unique("n")
    watcher = subprocess.Popen([KUBECTL, "--kubeconfig", str(kubeconfig), "get", "nodes", "--watch",
                                "-l", f"w={name}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})  # fmt: skip
    try:
        core.create_node(make_node(name, w=name))
        assert watcher.stdout is not None
        lines = [watcher.stdout.readline() for _ in range(2)]
    finally:
        watcher.terminate()
        watcher.communicate(timeout=5)  # waits, and reads and closes its pipes
    assert lines[0].split()[:2] == ["NAME", "STATUS"] and lines[1].startswith(name)
