"""`python -m devstack.aws --host 127.0.0.1 --port 5000 --cluster-name nodeflow-dev`: run until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import json
import signal
import threading

from devstack.aws.server import MotoServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.aws", description="Seeded, patched moto server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--cluster-name", default="nodeflow-dev")
    parser.add_argument("--region", default="us-west-2")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server = MotoServer(args.host, args.port, args.cluster_name, args.region).start()
    print(json.dumps({"url": server.url, "seeded": server.seeded}), flush=True)
    try:
        stop.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
