"""What a kubelet reports for a pod it started: pure functions, no I/O."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def pod_ip(namespace: str, name: str) -> str:
    """A stable address in 10.128.0.0/10 for the pod, derived from its namespace and name."""
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).digest()
    return f"10.{128 + digest[0] % 64}.{digest[1]}.{1 + digest[2] % 254}"


def needs_start(pod: Mapping[str, Any]) -> bool:
    """A bound, live pod that has not been reported Running (or terminal) yet."""
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    return not meta.get("deletionTimestamp") and status.get("phase") not in ("Running", *TERMINAL_PHASES)


def _container_status(container: Mapping[str, Any], pod_key: str, now: str, init: bool) -> Obj:
    container_id = hashlib.sha256(f"{pod_key}/{container['name']}".encode()).hexdigest()
    state: Obj = (
        {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}
        if init
        else {"running": {"startedAt": now}}
    )
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "containerID": f"containerd://{container_id}",
        "ready": not init,
        "started": not init,
        "restartCount": 0,
        "state": state,
    }


def running_status(pod: Mapping[str, Any], host_ip: str, now: str) -> Obj:
    """The status of a pod whose containers all started: phase Running, Ready, with IPs and start time."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    ip = host_ip if spec.get("hostNetwork") else pod_ip(meta.get("namespace", ""), meta.get("name", ""))
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "initContainerStatuses": [_container_status(c, key, now, True) for c in spec.get("initContainers") or []],
        "containerStatuses": [_container_status(c, key, now, False) for c in spec.get("containers") or []],
    }
