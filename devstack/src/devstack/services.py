"""The dev stack's service processes, one role each, so that they run on separate cores and each imports
only what its role needs:

    python -m devstack.services kube --port 6443 --token-file .nodeflow/kube-tokens.json \
        --tls-cert-file .nodeflow/pki/apiserver.crt --tls-private-key-file .nodeflow/pki/apiserver.key \
        --ready-file .nodeflow/ready/kube-api.json
    python -m devstack.services moto --port 5000 --cluster-name nodeflow-dev \
        --cluster-endpoint https://127.0.0.1:6443 --ready-file .nodeflow/ready/moto.json
    python -m devstack.services kubelet --kubeconfig .nodeflow/kubeconfig --moto-url http://127.0.0.1:5000 \
        --cluster-name nodeflow-dev --ready-file .nodeflow/ready/kubelet.json

`kube` serves the Kubernetes API emulator (aiohttp, no AWS library), authenticating the bearer tokens of
`--token-file` (`devstack.kube.access.load_tokens`) and authorizing with RBAC, recording its decisions
where `DEVSTACK_KUBE_AUTHZ_LOG` says (without `--token-file` it serves every request unchecked), over
HTTPS with `--tls-cert-file` and `--tls-private-key-file` (kube-apiserver's flags); `moto`
the seeded, patched moto server; `kubelet` runs the simulated kubelet and the pod binder, clients of the
other two.

Once its role serves, a process writes its ready file (atomically): `{"pid", "url"}` (`url` is absent for
`kubelet`; port `0` asks for a free port, and `url` says which was bound; `moto` with
`--worker-policy-file` adds the worker's access key, see MotoRole). It runs until SIGTERM or
SIGINT, then stops and exits 0. If a loop dies, the process stops everything and exits 1, so the parent
notices.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

log = logging.getLogger("devstack.services")

HOST = "127.0.0.1"
DEFAULT_REGION = "us-west-2"
ROLES = ("kube", "moto", "kubelet")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m devstack.services", description=__doc__.split("\n\n")[0])
    roles = parser.add_subparsers(dest="role", required=True)
    kube = roles.add_parser("kube", help="the Kubernetes API emulator")
    kube.add_argument("--port", type=int, default=0, help="Kubernetes API port (0 = a free port)")
    kube.add_argument("--token-file", type=Path, default=None,
                      help="JSON token table: authenticate bearer tokens and authorize with RBAC")  # fmt: skip
    kube.add_argument("--tls-cert-file", type=Path, default=None, help="serve HTTPS with this certificate")
    kube.add_argument("--tls-private-key-file", type=Path, default=None, help="the certificate's private key")
    moto = roles.add_parser("moto", help="the seeded moto (AWS) server")
    moto.add_argument("--port", type=int, default=0, help="moto (AWS) port (0 = a free port)")
    moto.add_argument("--cluster-name", default="nodeflow-dev", help="tag value of the seeded subnets/SGs")
    moto.add_argument("--region", default=DEFAULT_REGION)
    moto.add_argument("--cluster-endpoint", default=None,
                      help="the endpoint the seeded EKS cluster answers (the Kubernetes API's URL)")  # fmt: skip
    moto.add_argument("--response-cache", type=Path, default=None,
                      help="keep moto's unchanging answers (DescribeInstanceTypes) in this directory")  # fmt: skip
    moto.add_argument("--worker-policy-file", type=Path, default=None,
                      help="the worker's IAM policy (JSON), enforced by action")  # fmt: skip
    moto.add_argument("--cluster-ca-file", type=Path, default=None,
                      help="PEM of the CA of the endpoint, answered as the EKS cluster's CA bundle")  # fmt: skip
    kubelet = roles.add_parser("kubelet", help="the simulated kubelet and the pod binder")
    api = kubelet.add_mutually_exclusive_group(required=True)
    api.add_argument("--kubeconfig", type=Path, help="a kubeconfig of the Kubernetes API emulator (with its token)")
    api.add_argument("--kube-url", help="the Kubernetes API emulator's URL, when it authenticates nobody")
    kubelet.add_argument("--moto-url", required=True, help="the moto server's URL")
    kubelet.add_argument("--cluster-name", default="nodeflow-dev", help="tag value of the cluster's instances")
    kubelet.add_argument("--region", default=DEFAULT_REGION)
    kubelet.add_argument("--ready-delay", type=float, default=1.0,
                         help="seconds from a Node's registration until it turns Ready")  # fmt: skip
    for sub in (kube, moto, kubelet):
        sub.add_argument("--ready-file", type=Path, required=True, help="JSON written once the role serves")
    return parser.parse_args(argv)


def write_ready_file(path: Path, info: dict[str, Any]) -> None:
    """Write `info` as JSON so a reader never sees a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(tmp, path)


def ec2_client(endpoint_url: str, region: str) -> Any:
    """A boto3 EC2 client on the local moto server (fixed fake credentials, no retries to hide bugs)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "ec2",
        endpoint_url=endpoint_url,
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 2, "mode": "standard"}),
    )


class Role(Protocol):
    """What one service process runs: `start()` returns once it serves; `stop()` ends it."""

    url: str | None

    def start(self) -> None: ...

    def stop(self) -> None: ...


class KubeRole:
    """The Kubernetes API emulator; with `token_file`, authenticating and authorizing (RBAC)."""

    def __init__(self, port: int, token_file: Path | None = None, tls: tuple[Path, Path] | None = None) -> None:
        from devstack.kube.access import authz_log_from_env, load_tokens
        from devstack.kube.server import KubeApiServer

        tokens = load_tokens(token_file) if token_file is not None else None
        self._server = KubeApiServer(host=HOST, port=port, tokens=tokens, authz_log=authz_log_from_env(),
                                     tls=tls)  # fmt: skip
        self.url: str | None = None

    def start(self) -> None:
        self._server.start()
        self.url = self._server.url

    def stop(self) -> None:
        self._server.stop()


class MotoRole:
    """The seeded, patched moto server. With `worker_policy_file`, moto enforces that policy by action for the
    worker's principal (devstack.aws.access), and `ready_info` gives its access key
    (`controllerAccessKeyId`, `controllerSecretAccessKey`) for the ready file."""

    def __init__(
        self,
        port: int,
        cluster_name: str,
        region: str,
        cluster_endpoint: str | None,
        response_cache: Path | None,
        worker_policy_file: Path | None = None,
        cluster_ca_file: Path | None = None,
    ) -> None:
        from devstack.aws.server import MotoServer

        policy = json.loads(worker_policy_file.read_text()) if worker_policy_file is not None else None
        ca = cluster_ca_file.read_bytes() if cluster_ca_file is not None else None
        self._server = MotoServer(HOST, port, cluster_name, region=region, response_cache=response_cache,
                                  cluster_endpoint=cluster_endpoint, worker_policy=policy, cluster_ca=ca)  # fmt: skip
        self.url: str | None = None
        self.ready_info: dict[str, str] = {}

    def start(self) -> None:
        self._server.start()
        self.url = self._server.url
        if self._server.controller_key is not None:
            key_id, secret = self._server.controller_key
            self.ready_info = {"controllerAccessKeyId": key_id, "controllerSecretAccessKey": secret}

    def stop(self) -> None:
        self._server.stop()


class KubeletRole:
    """The simulated kubelet and the pod binder, each a loop in a thread of its own; a loop that fails
    sets `failed` and `stop_event`."""

    def __init__(
        self,
        kube: str | Path,
        moto_url: str,
        cluster_name: str,
        region: str,
        stop_event: threading.Event,
        ready_delay: float = 1.0,
    ) -> None:
        self._ready_delay = ready_delay
        self._kube = kube  # the emulator's URL, or a kubeconfig (Path) with its token
        self._moto_url = moto_url
        self._cluster_name = cluster_name
        self._region = region
        self.url: str | None = None
        self.stop_event = stop_event
        self.failed = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        from devstack.binder import PodBinder
        from devstack.kubelet import SimulatedKubelet
        from kube.client import KubeClient

        def client() -> KubeClient:
            if isinstance(self._kube, Path):
                return KubeClient.from_kubeconfig(str(self._kube))
            return KubeClient.for_url(self._kube)

        kubelet = SimulatedKubelet(client(), ec2_client(self._moto_url, self._region),
                                   self._cluster_name, ready_delay=self._ready_delay)  # fmt: skip
        binder = PodBinder(client())
        self._spawn("kubelet", kubelet.run)
        self._spawn("binder", binder.run)

    def _spawn(self, name: str, loop: Callable[[threading.Event], None]) -> None:
        def target() -> None:
            try:
                loop(self.stop_event)
            except Exception:
                log.exception("the %s loop failed; stopping", name)
                self.failed.set()
                self.stop_event.set()

        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self, join_timeout: float = 5.0) -> None:
        """Stop the loops, waiting up to `join_timeout` each."""
        self.stop_event.set()
        for thread in self._threads:
            thread.join(join_timeout)


# Collect the young generation after this many net allocations (CPython's default is 700), and each older
# one after 20 collections of the one below (default 10).
GC_THRESHOLDS = (20_000, 20, 20)


def freeze_long_lived() -> None:
    """Once the role is up: freeze what it holds for good (moto's backends and service models, the
    emulator's stores and schemas) out of the cyclic collector. Each role allocates fast while it serves
    (XML and JSON for every request, watch events) over a large long-lived heap, and every full collection
    walked all of it; with the default thresholds, starting one (imports, moto's seed) ran half a dozen.
    Together with GC_THRESHOLDS (set before the imports), about a tenth of each role's CPU in the test
    suite. Frozen objects are still freed by reference counting; only garbage cycles wait longer."""
    gc.collect()
    gc.freeze()


def build_role(args: argparse.Namespace, stop_event: threading.Event) -> Role:
    if args.role == "kube":
        tls = (args.tls_cert_file, args.tls_private_key_file) if args.tls_cert_file else None
        return KubeRole(args.port, args.token_file, tls)
    if args.role == "moto":
        return MotoRole(args.port, args.cluster_name, args.region, args.cluster_endpoint, args.response_cache,
                        args.worker_policy_file, args.cluster_ca_file)  # fmt: skip
    return KubeletRole(
        args.kubeconfig or args.kube_url, args.moto_url, args.cluster_name, args.region, stop_event, args.ready_delay
    )


def main(argv: Sequence[str] | None = None) -> int:
    gc.set_threshold(*GC_THRESHOLDS)
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # one line per request drowns the rest
    stop_event = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    role = build_role(args, stop_event)
    try:
        role.start()
        info: dict[str, Any] = {"pid": os.getpid()}
        if role.url is not None:
            info["url"] = role.url
        info.update(getattr(role, "ready_info", {}))
        freeze_long_lived()
        write_ready_file(args.ready_file, info)
        log.info("ready: %s %s", args.role, role.url or "")
        while not stop_event.wait(1.0):
            pass
    finally:
        try:
            role.stop()
        except Exception:
            log.exception("stopping the %s role failed", args.role)
        log.info("stopped")
    failed = isinstance(role, KubeletRole) and role.failed.is_set()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
