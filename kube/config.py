"""Building a configured `kubernetes.client.ApiClient`: from a kubeconfig, in-cluster, or a plain URL.

These are the only places nodeflow reads Kubernetes credentials. Each helper returns a fresh `ApiClient`
whose connection pool is sized for a worker that runs several watches and a thread pool of activities
at once (the official default of 5 x CPU connections starves under long-lived watches).
"""

from __future__ import annotations

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

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
