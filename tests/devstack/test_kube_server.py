"""The server itself: discovery, version, lifecycle, kubeconfig, CLI, and kmock fault injection."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys

import kmock
import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from devstack.kube.kubeconfig import write_kubeconfig
from devstack.kube.server import KubeApiServer
from tests.devstack.conftest import CoreApi, make_node, raw_request, unique


def test_version_is_v1_32(api_server: KubeApiServer) -> None:
    code, body = raw_request(api_server.url, "GET", "/version")
    assert (code, body["gitVersion"], body["major"], body["minor"]) == (200, "v1.32.0", "1", "32")


def test_core_discovery_lists_resources_with_short_names_and_subresources(api_server: KubeApiServer) -> None:
    _, body = raw_request(api_server.url, "GET", "/api/v1")
    by_name = {r["name"]: r for r in body["resources"]}
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    assert by_name["pods"]["shortNames"] == ["po"] and by_name["pods"]["singularName"] == "pod"
    assert by_name["nodes"]["namespaced"] is False and "watch" in by_name["nodes"]["verbs"]
    assert by_name["pods/eviction"]["kind"] == "Eviction" and by_name["pods/eviction"]["group"] == "policy"
    assert {"pods/status", "pods/binding", "nodes/status"} <= set(by_name)


def test_group_discovery_covers_karpenter_and_leases(api_server: KubeApiServer) -> None:
    _, groups = raw_request(api_server.url, "GET", "/apis")
    names = [g["name"] for g in groups["groups"]]
    assert {"apps", "policy", "karpenter.sh", "karpenter.k8s.aws", "coordination.k8s.io"} <= set(names)
    _, aws = raw_request(api_server.url, "GET", "/apis/karpenter.k8s.aws/v1")
    ec2 = next(r for r in aws["resources"] if r["name"] == "ec2nodeclasses")
    assert ec2["shortNames"] == ["ec2nc", "ec2ncs"] and ec2["categories"] == ["karpenter"]
    _, sh = raw_request(api_server.url, "GET", "/apis/karpenter.sh")
    assert sh["preferredVersion"]["groupVersion"] == "karpenter.sh/v1"


def test_unknown_paths_are_not_found(api_server: KubeApiServer) -> None:
    assert raw_request(api_server.url, "GET", "/apis/example.com/v1")[0] == 404
    assert raw_request(api_server.url, "GET", "/api/v1/widgets")[0] == 404


def test_fault_injection_refuses_without_changing_state(api_server: KubeApiServer, core: CoreApi) -> None:
    name = unique("n")

    def inject() -> None:
        api_server.emulator["post /api/v1/nodes"][:1] << 503

    api_server.call(inject)
    with pytest.raises(ApiException) as caught:
        core.create_node(make_node(name))
    assert caught.value.status == 503
    with pytest.raises(ApiException):
        core.read_node(name)
    assert core.create_node(make_node(name)).metadata.name == name


def test_throttled_lists_are_injectable(api_server: KubeApiServer, core: CoreApi) -> None:
    def inject() -> None:
        api_server.emulator[kmock.action.LIST, kmock.resource("v1/namespaces")][:1] << 429

    api_server.call(inject)
    with pytest.raises(ApiException) as caught:
        core.list_namespace()
    assert caught.value.status == 429
    assert core.list_namespace().items


def test_kubeconfig_works_with_the_official_loader(api_server: KubeApiServer, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "nested" / "config"
    write_kubeconfig(path, api_server.url)
    api = config.new_client_from_config(config_file=str(path), context="nodeflow-dev")
    core: CoreApi = client.CoreV1Api(api)
    assert core.read_namespace("default").metadata.name == "default"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_bad_kubeconfig_url_names_the_field(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="server_url"):
        write_kubeconfig(tmp_path / "config", "127.0.0.1:6443")


def test_servers_start_on_free_ports_and_stop_in_any_order() -> None:
    first, second = KubeApiServer(controllers=False), KubeApiServer(controllers=False)
    first.start()
    second.start()
    assert first.url != second.url
    first.stop()
    assert raw_request(second.url, "GET", "/version")[0] == 200
    second.stop()
    second.stop()


def test_a_taken_port_fails_start_with_the_cause(api_server: KubeApiServer) -> None:
    port = int(api_server.url.rsplit(":", 1)[1])
    with pytest.raises(OSError):
        KubeApiServer(port=port).start()


def test_cli_serves_until_sigterm(tmp_path: pathlib.Path) -> None:
    kubeconfig = tmp_path / "config"
    proc = subprocess.Popen(
        [sys.executable, "-m", "devstack.kube", "--port", "0", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=pathlib.Path(__file__).parents[2],
        env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parents[2])},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Kubernetes API emulator serving at http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1].strip()
        assert raw_request(url, "GET", "/api/v1/namespaces/default")[0] == 200
        assert url in kubeconfig.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)  # waits, and reads and closes its pipes
        assert proc.returncode == 0
