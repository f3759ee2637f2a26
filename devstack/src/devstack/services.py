"""The dev stack's services process: the Kubernetes API emulator, the seeded moto server, the
simulated kubelet and the pod binder, in one Python process.

    python -m devstack.services --kube-port 6443 --moto-port 5000 --cluster-name nodeflow-dev \
        --ready-file .nodeflow/services.json

Once everything serves, it writes the ready file (atomically) with the ports and URLs actually
bound (`0` asks for free ports). It runs until SIGTERM or SIGINT, then stops the loops and servers
and exits 0. If a loop dies, the process stops everything and exits 1, so the parent notices.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

log = logging.getLogger("devstack.services")

HOST = "127.0.0.1"
DEFAULT_REGION = "us-west-2"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m devstack.services", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kube-port", type=int, default=0, help="Kubernetes API port (0 = a free port)")
    parser.add_argument("--moto-port", type=int, default=0, help="moto (AWS) port (0 = a free port)")
    parser.add_argument("--cluster-name", default="nodeflow-dev", help="tag value of the seeded subnets/SGs")
    parser.add_argument("--region", default=DEFAULT_REGION)
    parser.add_argument("--response-cache", type=Path, default=None,
                        help="keep moto's unchanging answers (DescribeInstanceTypes) in this directory")  # fmt: skip
    parser.add_argument("--ready-file", type=Path, required=True, help="JSON written once everything serves")
    return parser.parse_args(argv)


def write_ready_file(path: Path, info: dict[str, Any]) -> None:
    """Write `info` as JSON so a reader never sees a half-written file."""
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


class Services:
    """The servers and loops of this process. `start()` returns once both servers serve."""

    def __init__(
        self, kube_port: int, moto_port: int, cluster_name: str, region: str, response_cache: Path | None = None
    ) -> None:
        from devstack.aws.server import MotoServer
        from devstack.kube.server import KubeApiServer

        self.cluster_name = cluster_name
        self.region = region
        self.kube_server = KubeApiServer(host=HOST, port=kube_port)
        self.moto_server = MotoServer(HOST, moto_port, cluster_name, region=region, response_cache=response_cache)
        self.stop_event = threading.Event()
        self.failed = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        from devstack.binder import PodBinder
        from devstack.kubelet import SimulatedKubelet
        from kube.client import KubeClient

        self.kube_server.start()
        self.moto_server.cluster_endpoint = self.kube_url  # what DescribeCluster answers, as on EKS
        self.moto_server.start()
        kubelet = SimulatedKubelet(KubeClient.for_url(self.kube_server.url), ec2_client(self.moto_url, self.region),
                                   self.cluster_name)  # fmt: skip
        binder = PodBinder(KubeClient.for_url(self.kube_server.url))
        self._spawn("kubelet", kubelet.run)
        self._spawn("binder", binder.run)

    @property
    def kube_url(self) -> str:
        return str(self.kube_server.url)

    @property
    def moto_url(self) -> str:
        return str(self.moto_server.url)

    def _spawn(self, name: str, loop: Callable[[threading.Event], None]) -> None:
        def target() -> None:
            try:
                loop(self.stop_event)
            except Exception:
                log.exception("the %s loop failed; stopping the services", name)
                self.failed.set()
                self.stop_event.set()

        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self, join_timeout: float = 5.0) -> None:
        """Stop the loops (waiting up to `join_timeout` each), then the servers."""
        self.stop_event.set()
        for thread in self._threads:
            thread.join(join_timeout)
        for server in (self.moto_server, self.kube_server):
            try:
                server.stop()
            except Exception:
                log.exception("stopping %s failed", type(server).__name__)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # one line per request drowns the rest
    services = Services(args.kube_port, args.moto_port, args.cluster_name, args.region, args.response_cache)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        services.stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        services.start()
        write_ready_file(
            args.ready_file,
            {
                "pid": os.getpid(),
                "kubeUrl": services.kube_url,
                "motoUrl": services.moto_url,
                "clusterName": args.cluster_name,
                "region": args.region,
            },
        )
        log.info("ready: kube %s, moto %s", services.kube_url, services.moto_url)
        while not services.stop_event.wait(1.0):
            pass
    finally:
        services.stop()
        log.info("stopped")
    return 1 if services.failed.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())
