"""Building a configured `kubernetes.client.ApiClient`: from a kubeconfig, in-cluster, or a plain URL.

These are the only places nodeflow reads Kubernetes credentials. Each helper returns a fresh `ApiClient`
whose connection pool is sized for a worker that runs several watches and a thread pool of activities
at once (the official default of 5 x CPU connections starves under long-lived watches).

`resolve_api_client` finds the credentials as kubectl does (client-go's loading rules), for the commands
an operator runs (`nodeflow status`, `drain`, `explain`, ...):

1. `--kubeconfig FILE`: that file alone; it must exist.
2. else `KUBECONFIG`: a list of files separated by `os.pathsep` (":" on Linux and macOS). The files that
   exist are merged, the missing ones skipped; `~/.kube/config` is then not read.
3. else `~/.kube/config`.
4. when none of those gave a file: the pod's service account (in-cluster).

Merging several files follows client-go: the first file to define a cluster, user or context of a
given name wins, and current-context comes from the first file that sets one. `--context` picks a
context of the (merged) files instead of their current-context. The Python client's own
`load_kube_config` reads `KUBECONFIG` once, at import, and takes the *last* file's current-context, so
the files are merged here. A failure is a KubeConfigError naming every source tried and why each failed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import SERVICE_CERT_FILENAME, SERVICE_TOKEN_FILENAME, InClusterConfigLoader
from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader

# Connections kept per host: a handful of watches plus a thread pool of activities.
CONNECTION_POOL_SIZE = 32


class KubeConfigError(Exception):
    """The Kubernetes connection settings are missing or malformed; the message says what to fix."""


def _sized(configuration: client.Configuration) -> client.ApiClient:
    configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
    return client.ApiClient(configuration)


def api_client_from_kubeconfig(path: str | None = None, context: str | None = None) -> client.ApiClient:
    """An ApiClient from a kubeconfig file (`path`, else $KUBECONFIG, else ~/.kube/config) and `context`
    (else the file's current-context). Raises KubeConfigError naming the file and context."""
    configuration = client.Configuration()
    try:
        config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration, persist_config=False
        )
    except (ConfigException, OSError, TypeError) as exc:
        where = path or "$KUBECONFIG or ~/.kube/config"
        raise KubeConfigError(
            f"cannot load kubeconfig {where!r} (context {context or 'current-context'!r}): {exc}; "
            "pass a readable kubeconfig path and an existing context name"
        ) from exc
    return _sized(configuration)


def api_client_in_cluster() -> client.ApiClient:
    """An ApiClient from the pod's service account (token and CA under
    /var/run/secrets/kubernetes.io/serviceaccount, host from KUBERNETES_SERVICE_HOST/PORT).
    Raises KubeConfigError when not running in a pod."""
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise KubeConfigError(f"not running in a Kubernetes pod ({exc}); use a kubeconfig outside the cluster") from exc
    return _sized(configuration)


def api_client_for_url(url: str) -> client.ApiClient:
    """An ApiClient for an unauthenticated API server at `url` (e.g. the devstack emulator,
    "http://127.0.0.1:6443"). Raises KubeConfigError when `url` is not http(s)://host[:port]."""
    if not url.startswith(("http://", "https://")):
        raise KubeConfigError(f"Kubernetes API url {url!r} must start with http:// or https://")
    configuration = client.Configuration()
    configuration.host = url.rstrip("/")
    return _sized(configuration)


# -- kubectl's order -------------------------------------------------------------------------------------

# The three lists of a kubeconfig that are merged by name across files.
_NAMED_LISTS = ("clusters", "users", "contexts")


def resolve_api_client(
    kubeconfig: str | None = None,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
    kubeconfig_flag: str = "--kubeconfig",
    token_file: str = SERVICE_TOKEN_FILENAME,
    ca_file: str = SERVICE_CERT_FILENAME,
) -> client.ApiClient:
    """An ApiClient from the first source of kubectl's order (module docstring): `kubeconfig`, else the
    files of `KUBECONFIG` in `env` (default: os.environ), else `$HOME/.kube/config`, else the service
    account at `token_file`/`ca_file` with KUBERNETES_SERVICE_HOST/PORT from `env`. `context` picks a
    context of the kubeconfig (none found: an error, as kubectl's). `kubeconfig_flag` names where the
    explicit path comes from, in messages. Raises KubeConfigError naming each source tried and why it failed."""
    env = os.environ if env is None else env
    configuration = client.Configuration()
    if kubeconfig:
        path = os.path.expanduser(kubeconfig)
        if not os.path.isfile(path):
            raise KubeConfigError(f"{kubeconfig_flag} {kubeconfig}: no such file")
        load_kubeconfig_files([path], context, configuration)
        return _sized(configuration)
    files, tried = kubeconfig_files(env, kubeconfig_flag)
    if files:
        load_kubeconfig_files(files, context, configuration)
        return _sized(configuration)
    if context:
        raise KubeConfigError(f"context {context!r} does not exist: no kubeconfig file was found ({'; '.join(tried)})")
    failure = _load_in_cluster(env, token_file, ca_file, configuration)
    if failure is None:
        return _sized(configuration)
    tried.append(failure)
    raise KubeConfigError(
        f"no Kubernetes credentials: {'; '.join(tried)}. Pass --kubeconfig FILE (and --context NAME), "
        "set KUBECONFIG, write ~/.kube/config, or run in a pod with a service account"
    )


def kubeconfig_files(env: Mapping[str, str], kubeconfig_flag: str = "--kubeconfig") -> tuple[list[str], list[str]]:
    """Without an explicit path: the kubeconfig files kubectl would merge (the existing files of
    KUBECONFIG, in order and without repeats; else ~/.kube/config when it exists) and, for a message,
    what was tried and found missing."""
    tried = [f"no {kubeconfig_flag}"]
    listed = env.get("KUBECONFIG", "")
    if listed:
        paths = list(dict.fromkeys(os.path.expanduser(p) for p in listed.split(os.pathsep) if p))
        existing = [p for p in paths if os.path.isfile(p)]
        if not existing:
            tried.append(f"no file of KUBECONFIG={listed} exists")
        return existing, tried
    tried.append("KUBECONFIG not set")
    home = env.get("HOME") or os.path.expanduser("~")
    default = os.path.join(home, ".kube", "config")
    if os.path.isfile(default):
        return [default], tried
    tried.append(f"~/.kube/config does not exist ({default})")
    return [], tried


def merge_kubeconfigs(documents: list[tuple[str, Any]]) -> ConfigNode:
    """(path, parsed YAML) of each file, in order, as one kubeconfig: per name, the first file's cluster,
    user or context; the first non-empty current-context. Each entry keeps its file's path, so relative
    file references (certificate-authority: ca.crt) resolve against that file's directory, as kubectl's.
    Raises KubeConfigError naming a file that is not a kubeconfig mapping."""
    merged: dict[str, Any] = {name: [] for name in _NAMED_LISTS}
    merged["current-context"] = ""
    for path, doc in documents:
        if doc is None:  # an empty file, as kubectl: contributes nothing
            continue
        if not isinstance(doc, dict):
            raise KubeConfigError(
                f"kubeconfig {path}: not a kubeconfig (a YAML mapping with clusters, users, contexts)"
            )
        for list_name in _NAMED_LISTS:
            seen = {entry.value.get("name") for entry in merged[list_name]}
            for entry in doc.get(list_name) or []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if name is None or name in seen:
                    continue
                seen.add(name)
                merged[list_name].append(ConfigNode(f"{path}/{list_name}[name={name}]", entry, path))
        if not merged["current-context"] and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
    first = documents[0][0] if documents else "kubeconfig"
    return ConfigNode(first, merged, first)


def load_kubeconfig_files(paths: list[str], context: str | None, configuration: client.Configuration) -> None:
    """Set `configuration` from the merge of `paths` (merge_kubeconfigs) and `context`, else the merged
    current-context. Raises KubeConfigError naming the files and the context."""
    where = os.pathsep.join(paths)
    documents: list[tuple[str, Any]] = []
    for path in paths:
        try:
            with open(path) as file:
                documents.append((path, yaml.safe_load(file)))
        except (OSError, yaml.YAMLError) as exc:
            raise KubeConfigError(f"kubeconfig {path}: cannot read it: {exc}") from exc
    merged = merge_kubeconfigs(documents)
    if not context and not merged.value["current-context"]:
        raise KubeConfigError(f"kubeconfig {where}: current-context is not set; pass --context NAME")
    names = [entry.value.get("name") for entry in merged.value["contexts"]]
    if context and context not in names:
        known = ", ".join(str(n) for n in names) or "none"
        raise KubeConfigError(f"kubeconfig {where}: context {context!r} does not exist (contexts: {known})")
    try:
        loader = KubeConfigLoader(config_dict=merged, active_context=context, config_base_path=None)
        loader.load_and_set(configuration)
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        chosen = context or merged.value["current-context"]
        raise KubeConfigError(f"kubeconfig {where} (context {chosen!r}): {exc}") from exc


def _load_in_cluster(
    env: Mapping[str, str], token_file: str, ca_file: str, configuration: client.Configuration
) -> str | None:
    """Set `configuration` from the pod's service account; None when done, else why not (a phrase)."""
    if not env.get("KUBERNETES_SERVICE_HOST") or not env.get("KUBERNETES_SERVICE_PORT"):
        return "not in a pod (KUBERNETES_SERVICE_HOST unset)"
    if not os.path.isfile(token_file):
        return f"in a pod but no service account token at {token_file} (automountServiceAccountToken: false?)"
    try:
        InClusterConfigLoader(token_filename=token_file, cert_filename=ca_file, environ=env).load_and_set(configuration)
    except ConfigException as exc:
        return f"in-cluster service account: {exc}"
    return None
