"""kube.config.resolve_api_client finds credentials in kubectl's order: --kubeconfig, the KUBECONFIG files
(merged: first file wins per name, current-context from the first file that sets one), ~/.kube/config,
the pod's service account; a failure names every source tried."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube.config import KubeConfigError, resolve_api_client


def kubeconfig(
    path: Path,
    server: str,
    name: str = "one",
    current: str | None = "one",
    token: str | None = None,
    cluster_extra: dict[str, str] | None = None,
) -> Path:
    """A kubeconfig with one cluster, user and context, all named `name`."""
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, **(cluster_extra or {})}}],
        "users": [{"name": name, "user": {"token": token} if token else {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }
    if current is not None:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME, no KUBECONFIG, not in a pod."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    return home


def host(kubeconfig: str | None = None, context: str | None = None, **kwargs: Any) -> str:
    return str(resolve_api_client(kubeconfig, context, **kwargs).configuration.host)


def test_the_flag_wins_over_kubeconfig_and_home(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig(home / ".kube" / "config", "http://home:1")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "env", "http://env:1")))
    flag = kubeconfig(tmp_path / "flag", "http://flag:1", token="secret")
    client = resolve_api_client(str(flag))
    assert client.configuration.host == "http://flag:1"
    assert client.configuration.get_api_key_with_prefix("BearerToken") == "Bearer secret"


def test_a_missing_flag_file_is_an_error_not_a_fallback(home: Path, tmp_path: Path) -> None:
    kubeconfig(home / ".kube" / "config", "http://home:1")
    with pytest.raises(KubeConfigError, match=r"--kubeconfig .*nope: no such file"):
        resolve_api_client(str(tmp_path / "nope"))


def test_kubeconfig_replaces_the_home_file(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig(home / ".kube" / "config", "http://home:1")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "env", "http://env:1")))
    assert host() == "http://env:1"


def test_the_home_file_when_kubeconfig_is_unset(home: Path) -> None:
    kubeconfig(home / ".kube" / "config", "http://home:1")
    assert host() == "http://home:1"


def test_kubeconfig_files_merge_first_wins_and_the_first_current_context(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = kubeconfig(tmp_path / "a", "http://a:1", name="shared", current=None)  # defines "shared", no current
    second = kubeconfig(tmp_path / "b", "http://b:1", name="shared", current="shared")  # its "shared" is ignored
    third = kubeconfig(tmp_path / "c", "http://c:1", name="third", current="third")  # later current-context loses
    missing = tmp_path / "missing"  # skipped, as kubectl skips them
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, [missing, first, second, third])))
    assert host() == "http://a:1"
    assert host(context="third") == "http://c:1"


def test_a_context_the_files_lack_is_an_error_naming_the_known_ones(home: Path) -> None:
    kubeconfig(home / ".kube" / "config", "http://home:1")
    with pytest.raises(KubeConfigError, match=r"context 'other' does not exist \(contexts: one\)"):
        host(context="other")


def test_no_current_context_asks_for_one(home: Path) -> None:
    kubeconfig(home / ".kube" / "config", "http://home:1", current=None)
    with pytest.raises(KubeConfigError, match="current-context is not set"):
        host()


def test_relative_files_resolve_against_their_own_kubeconfig(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = tmp_path / "second" / "ca.crt"
    ca.parent.mkdir()
    ca.write_text("not checked until a connection is made\n")
    first = kubeconfig(tmp_path / "first" / "config", "https://a:1", name="a", current=None)
    second = kubeconfig(ca.parent / "config", "https://b:1", name="b", current="b",
                        cluster_extra={"certificate-authority": "ca.crt"})  # fmt: skip
    monkeypatch.setenv("KUBECONFIG", f"{first}{os.pathsep}{second}")
    client = resolve_api_client()
    assert (client.configuration.host, client.configuration.ssl_ca_cert) == ("https://b:1", str(ca))


def in_pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("pod-token")
    ca.write_text("pem")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return {"token_file": str(token), "ca_file": str(ca)}


def test_in_cluster_last(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = in_pod(tmp_path, monkeypatch)
    client = resolve_api_client(**files)  # type: ignore[arg-type]
    assert client.configuration.host == "https://10.0.0.1:443"
    assert client.configuration.get_api_key_with_prefix("BearerToken").lower() == "bearer pod-token"


def test_a_kubeconfig_file_comes_before_in_cluster(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = in_pod(tmp_path, monkeypatch)
    kubeconfig(home / ".kube" / "config", "http://home:1")
    assert host(**files) == "http://home:1"


def test_kubeconfig_naming_only_missing_files_falls_to_in_cluster(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = in_pod(tmp_path, monkeypatch)
    kubeconfig(home / ".kube" / "config", "http://home:1")  # not read: KUBECONFIG is set
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert host(**files) == "https://10.0.0.1:443"


def test_nothing_found_names_everything_tried(home: Path) -> None:
    with pytest.raises(KubeConfigError) as caught:
        resolve_api_client()
    message = str(caught.value)
    for part in ("no --kubeconfig", "KUBECONFIG not set", "~/.kube/config does not exist",
                 "not in a pod (KUBERNETES_SERVICE_HOST unset)"):  # fmt: skip
        assert part in message, message


def test_a_pod_without_a_token_says_so(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = in_pod(tmp_path, monkeypatch)
    with pytest.raises(KubeConfigError, match="no service account token"):
        resolve_api_client(token_file=str(tmp_path / "none"), ca_file=files["ca_file"])


def test_a_context_without_any_kubeconfig_is_an_error_even_in_a_pod(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = in_pod(tmp_path, monkeypatch)
    with pytest.raises(KubeConfigError, match="context 'prod' does not exist: no kubeconfig file was found"):
        resolve_api_client(context="prod", **files)  # type: ignore[arg-type]
