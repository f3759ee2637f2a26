"""A kubeconfig for the emulator: one cluster, one user (with a bearer token, or without credentials), one
context."""

from __future__ import annotations

import base64
import pathlib

import yaml


def kubeconfig_dict(
    server_url: str,
    context: str = "nodeflow-dev",
    token: str | None = None,
    namespace: str = "default",
    ca_file: pathlib.Path | None = None,
) -> dict[str, object]:
    """The kubeconfig document as a dict (what ``write_kubeconfig`` writes): the user carries ``token``
    as its bearer token when given; the context's namespace is ``namespace``; an https server is
    trusted through ``ca_file`` (its PEM, as ``certificate-authority-data``)."""
    if not server_url.startswith(("http://", "https://")):
        raise ValueError(f"server_url must be an http(s) URL such as http://127.0.0.1:6443, got {server_url!r}")
    cluster: dict[str, str] = {"server": server_url}
    if ca_file is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_file.read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": {"token": token} if token else {}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(
    path: pathlib.Path,
    server_url: str,
    context: str = "nodeflow-dev",
    token: str | None = None,
    namespace: str = "default",
    ca_file: pathlib.Path | None = None,
) -> None:
    """Write a kubeconfig that kubectl and ``kubernetes.config.load_kube_config`` accept (see
    ``kubeconfig_dict``).

    Parent directories are created; an existing file is replaced; the file is private (0600).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(server_url, context, token, namespace, ca_file), sort_keys=False)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.chmod(0o600)
    tmp.replace(path)
