"""Effective pod requests: containers, init containers (max rule), sidecars, overhead."""

from __future__ import annotations

from typing import Any

import pytest

from scheduling.constraints.resources import host_ports, pod_requests, ports_conflict

GI = 2**30


def c(cpu: str, memory: str | None = None, sidecar: bool = False) -> dict[str, Any]:
    requests = {"cpu": cpu, **({"memory": memory} if memory else {})}
    out: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


@pytest.mark.parametrize(
    ("spec", "cpu"),
    [
        ({"containers": [c("100m"), c("200m")]}, 300),
        ({"containers": [c("100m")], "initContainers": [c("1")]}, 1000),  # init peak wins
        ({"containers": [c("500m")], "initContainers": [c("200m")]}, 500),  # containers win
        # sidecar runs beside the containers and beside later init containers
        ({"containers": [c("500m")], "initContainers": [c("100m", sidecar=True), c("1")]}, 1100),
        ({"containers": [c("500m")], "initContainers": [c("100m", sidecar=True)]}, 600),
        ({"containers": [c("500m")], "overhead": {"cpu": "250m"}}, 750),
        ({"containers": [c("500m"), c("500m")], "resources": {"requests": {"cpu": "2"}}}, 2000),  # pod-level
    ],
)
def test_cpu_request(spec: dict[str, Any], cpu: int) -> None:
    assert pod_requests(spec)["cpu"] == cpu


def test_runtime_class_overhead_and_pods_count() -> None:
    out = pod_requests({"containers": [c("1", "1Gi")]}, {"cpu": 100, "memory": GI})
    assert out == {"cpu": 1100, "memory": 2 * GI, "pods": 1}


def test_limits_without_requests_request_the_limit() -> None:
    out = pod_requests({"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]})
    assert out["nvidia.com/gpu"] == 2


def test_bad_quantity_names_the_container_field() -> None:
    with pytest.raises(ValueError, match=r"spec.containers\[0\].resources.requests.cpu"):
        pod_requests({"containers": [c("lots")]})


def test_host_port_conflicts() -> None:
    web = host_ports({"containers": [{"ports": [{"containerPort": 80, "hostPort": 80}]}]})
    other_ip = frozenset({("10.0.0.1", "TCP", 80)})
    udp = frozenset({("0.0.0.0", "UDP", 80)})
    assert ports_conflict(set(web), web)
    assert ports_conflict(set(web), other_ip)  # 0.0.0.0 overlaps every address
    assert not ports_conflict(set(web), udp)
