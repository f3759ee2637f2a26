"""What `nodeflow explain` and `nodeflow simulate --disruption --from-cluster` share: a Kubernetes client
built from the flags, the `--now` clock, and the instance-type catalog. No Temporal is imported here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from apis.meta import parse_rfc3339
from kube.types import Kube
from workers.settings import Settings


class ClusterReadError(Exception):
    """The cluster could not be read: no kubeconfig, an unreachable API, a refused list. The message says
    which and how to point the command elsewhere."""


def build_kube(kubeconfig: str | None) -> Kube:
    """A client from `kubeconfig`, else NODEFLOW_KUBECONFIG, else the in-cluster service account (as the
    worker and the ops commands do). Raises ClusterReadError when none can be built."""
    from kube.client import KubeClient  # the official client: loaded only when a cluster is read

    path = kubeconfig or Settings.from_env().kubeconfig
    try:
        return KubeClient.from_kubeconfig(path) if path else KubeClient.in_cluster()
    except Exception as err:  # KubeConfigError, a missing file, no service account
        where = f"kubeconfig {path}" if path else "the in-cluster service account (no --kubeconfig given)"
        raise ClusterReadError(f"cannot build a Kubernetes client from {where}: {err}") from err


def parse_now(text: str | None) -> datetime:
    """`--now` (RFC 3339, e.g. 2026-01-05T12:00:00Z; UTC when no offset is given), else the current time.
    Raises ValueError on anything else."""
    if not text:
        return datetime.now(UTC)
    when = parse_rfc3339(text)
    if when is None:
        raise ValueError(f"--now {text!r}: give an RFC 3339 time such as 2026-01-05T12:00:00Z")
    return when
