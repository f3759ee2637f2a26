"""What `nodeflow explain`, `nodeflow simulate --disruption --from-cluster` and the ops commands (`status`,
`drain`, `expire`, `replace`) share: a Kubernetes client found as kubectl finds one (`--kubeconfig`,
`--context`, KUBECONFIG, ~/.kube/config, in-cluster), and the `--now` clock. No Temporal is imported here.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from apis.meta import parse_rfc3339
from kube.types import Kube
from workers.settings import Settings


class ClusterReadError(Exception):
    """The cluster could not be read: no kubeconfig, an unreachable API, a refused list. The message says
    which and how to point the command elsewhere."""


def build_kube(kubeconfig: str | None, context: str | None = None) -> Kube:
    """A client as kubectl finds one (kube.config.resolve_api_client): `kubeconfig` (the --kubeconfig
    flag; NODEFLOW_KUBECONFIG, the worker's setting, counts as the flag), then the KUBECONFIG files, then
    ~/.kube/config, then the in-cluster service account; `context` (--context) picks a kubeconfig
    context. Raises ClusterReadError naming every source tried and why it failed."""
    from kube.client import KubeClient  # the official client: loaded only when a cluster is read
    from kube.config import KubeConfigError

    flag = "--kubeconfig"
    if not kubeconfig:
        from_env = Settings.from_env().kubeconfig
        kubeconfig, flag = (
            (from_env, "NODEFLOW_KUBECONFIG") if from_env else (None, "--kubeconfig (or NODEFLOW_KUBECONFIG)")
        )
    try:
        return KubeClient.resolve(kubeconfig, context, kubeconfig_flag=flag)
    except KubeConfigError as err:
        raise ClusterReadError(str(err)) from err


def add_context_argument(parser: argparse.ArgumentParser) -> None:
    """`--context NAME`, kubectl's: the kubeconfig context to use instead of its current-context."""
    parser.add_argument(
        "--context", default=None, metavar="NAME", help="kubeconfig context to use (default: its current-context)"
    )


def parse_now(text: str | None) -> datetime:
    """`--now` (RFC 3339, e.g. 2026-01-05T12:00:00Z; UTC when no offset is given), else the current time.
    Raises ValueError on anything else."""
    if not text:
        return datetime.now(UTC)
    when = parse_rfc3339(text)
    if when is None:
        raise ValueError(f"--now {text!r}: give an RFC 3339 time such as 2026-01-05T12:00:00Z")
    return when
