"""``python -m devstack.kube --host 127.0.0.1 --port 6443 [--kubeconfig PATH]``: serve until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import logging
import pathlib
import signal
import sys
import threading
from collections.abc import Sequence

from devstack.kube.kubeconfig import write_kubeconfig
from devstack.kube.server import KubeApiServer


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.kube", description="Run the Kubernetes API emulator.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=6443, help="port to listen on; 0 picks a free one (default 6443)")
    parser.add_argument("--kubeconfig", type=pathlib.Path, help="write a kubeconfig for the server to this path")
    parser.add_argument("--no-controllers", action="store_true", help="do not run the in-process controllers")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with KubeApiServer(args.host, args.port, controllers=not args.no_controllers) as server:
        if args.kubeconfig:
            write_kubeconfig(args.kubeconfig, server.url)
        print(f"Kubernetes API emulator serving at {server.url}", flush=True)
        if args.kubeconfig:
            print(f"kubectl --kubeconfig {args.kubeconfig} get nodes", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
