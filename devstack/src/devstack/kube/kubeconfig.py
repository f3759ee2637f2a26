"""A kubeconfig for the emulator: one cluster, one user without credentials, one context."""

from __future__ import annotations

import pathlib

import yaml


def kubeconfig_dict(server_url: str, context: str = "nodeflow-dev") -> dict[str, object]:
    """The kubeconfig document as a dict (what ``write_kubeconfig`` writes)."""
    if not server_url.startswith(("http://", "https://")):
        raise ValueError(f"server_url must be an http(s) URL such as http://127.0.0.1:6443, got {server_url!r}")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server_url}}],
        "users": [{"name": context, "user": {}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": "default"}}],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(path: pathlib.Path, server_url: str, context: str = "nodeflow-dev") -> None:
    """Write a kubeconfig that kubectl and ``kubernetes.config.load_kube_config`` accept (no auth).

    Parent directories are created; an existing file is replaced; the file is private (0600).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(server_url, context), sort_keys=False)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.chmod(0o600)
    tmp.replace(path)
