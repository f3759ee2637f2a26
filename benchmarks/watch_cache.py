"""What the leader's watch cache (kube/watch_cache.py) costs per pod: memory held and time per event.

    python benchmarks/watch_cache.py [--pods 10000]

Each pod is shaped like a Deployment's pod as an EKS API server returns it (a projected service-account
volume, an env var from the downward API, a readiness probe, the default tolerations, five conditions,
a container status; about 3.5 KB of JSON), with its own name, uid, node and IPs. Each is decoded from its
own JSON document, as a watch event is. Prints one JSON object: the bytes Python allocates to hold the
pods as decoded (`plain_kib_per_pod`) and as a Store keeps them (`kept_kib_per_pod`, tracemalloc), and
the microseconds a Store.apply takes per event.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python benchmarks/watch_cache.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kube import resources as r
from kube.watch_cache import Store

Obj = dict[str, Any]
CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


def typical_pod(i: int) -> Obj:
    """The i-th pod of a Deployment, as the API server serves it once Running."""
    ip = f"10.0.{i // 250 % 250}.{i % 250}"
    token = {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    ca = {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
    namespace_file = {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
    container = {
        "name": "app",
        "image": "public.ecr.aws/nginx/nginx:1.27",
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        ],
        "resources": {"requests": {"cpu": "900m", "memory": "3100Mi"}, "limits": {"memory": "3100Mi"}},
        "volumeMounts": [
            {"name": "kube-api-access", "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ],
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    tolerations = [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"web-7d9c6b5f4d-{i:05d}",
            "generateName": "web-7d9c6b5f4d-",
            "namespace": "default",
            "uid": f"5f1c2d3e-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100_000 + i),
            "creationTimestamp": "2026-11-25T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d9c6b5f4d"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-7d9c6b5f4d",
                    "uid": "0b1c2d3e-1111-4222-8333-444455556666",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "sources": [token, ca, {"downwardAPI": {"items": [namespace_file]}}],
                        "defaultMode": 420,
                    },
                }
            ],
            "containers": [container],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"ip-10-0-{i // 40 % 250}-{i // 40 % 200}.us-west-2.compute.internal",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": tolerations,
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-11-25T10:00:05Z"}
                for t in CONDITIONS
            ],
            "hostIP": "10.0.1.23",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": "2026-11-25T10:00:01Z",
            "containerStatuses": [
                {
                    "name": "app",
                    "state": {"running": {"startedAt": "2026-11-25T10:00:03Z"}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": "public.ecr.aws/nginx/nginx:1.27",
                    "imageID": "public.ecr.aws/nginx/nginx@sha256:" + f"{i:064x}",
                    "containerID": "containerd://" + f"{i + 1:064x}",
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        },
    }


def _held(build: Any) -> tuple[Any, int]:
    """What `build()` returns, and the bytes Python allocated for it that are still held."""
    tracemalloc.start()
    try:
        value = build()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, held


def run(pods: int) -> dict[str, Any]:
    documents = [json.dumps(typical_pod(i)) for i in range(pods)]
    plain, plain_bytes = _held(lambda: [json.loads(text) for text in documents])
    del plain
    events = [json.loads(text) for text in documents]
    store = Store(r.POD)
    _, kept_bytes = _held(lambda: [store.apply("ADDED", obj) for obj in events])
    timed = Store(r.POD)  # timed apart: tracemalloc slows every allocation
    began = time.perf_counter()
    for obj in events:
        timed.apply("MODIFIED", obj)
    seconds = time.perf_counter() - began
    return {
        "benchmark": "watch-cache",
        "pods": pods,
        "json_bytes_per_pod": round(sum(map(len, documents)) / pods),
        "plain_kib_per_pod": round(plain_bytes / pods / 1024, 1),
        "kept_kib_per_pod": round(kept_bytes / pods / 1024, 1),
        "kept_mib": round(kept_bytes / 2**20, 1),
        "apply_microseconds_per_event": round(seconds / pods * 1e6, 1),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/watch_cache.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--pods", type=int, default=10_000, help="pods to keep (10000)")
    args = parser.parse_args(argv)
    if args.pods < 1:
        parser.error(f"--pods {args.pods}: give at least 1 pod")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    print(json.dumps(run(parse_args(argv).pods)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
