"""What a pod asks of a node: the effective resource requests (Kubernetes' init-container max rule,
restartable sidecars, pod overhead), and its host ports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.values.quantity import ResourceList, add, to_units

Obj = Mapping[str, Any]
HostPort = tuple[str, str, int]  # (hostIP, protocol, port)


def _container_requests(container: Obj, where: str) -> ResourceList:
    """A container's requests; a resource with only a limit requests its limit (API defaulting)."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    out: ResourceList = {}
    for name, quantity in merged.items():
        try:
            out[name] = to_units(name, quantity)
        except ValueError as err:
            raise ValueError(f"{where}.resources.requests.{name}: {err}") from None
    return out


def _max(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for name, value in b.items():
        out[name] = max(out.get(name, 0), value)
    return out


def pod_requests(spec: Obj, runtime_overhead: Mapping[str, int] | None = None) -> ResourceList:
    """Effective requests: max(sum of containers + sidecars, each init container + sidecars started
    before it), replaced per resource by pod-level `spec.resources` when set, + overhead (spec.overhead,
    else the RuntimeClass's podFixed) + one `pods`.

    Raises ValueError naming the container field when a quantity does not parse."""
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for index, init in enumerate(spec.get("initContainers") or []):
        requests = _container_requests(init, f"spec.initContainers[{index}]")
        if init.get("restartPolicy") == "Always":
            sidecars = add(sidecars, requests)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, add(sidecars, requests))
    total: ResourceList = dict(sidecars)
    for index, container in enumerate(spec.get("containers") or []):
        total = add(total, _container_requests(container, f"spec.containers[{index}]"))
    total = _max(total, init_peak)
    pod_level = (spec.get("resources") or {}).get("requests") or (spec.get("resources") or {}).get("limits") or {}
    for name, quantity in pod_level.items():
        try:
            total[name] = to_units(name, quantity)
        except ValueError as err:
            raise ValueError(f"spec.resources.requests.{name}: {err}") from None
    overhead = spec.get("overhead")
    if overhead:
        total = add(total, {name: to_units(name, q) for name, q in overhead.items()})
    elif runtime_overhead:
        total = add(total, runtime_overhead)
    total["pods"] = total.get("pods", 0) + 1
    return {name: value for name, value in total.items() if value}


def host_ports(spec: Obj) -> frozenset[HostPort]:
    """Every (hostIP, protocol, hostPort) the pod's containers bind on the node."""
    out: set[HostPort] = set()
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                ip = port.get("hostIP") or "0.0.0.0"
                out.add((ip, port.get("protocol") or "TCP", int(port["hostPort"])))
    return frozenset(out)


def ports_conflict(used: frozenset[HostPort] | set[HostPort], wanted: frozenset[HostPort]) -> HostPort | None:
    """The first wanted port already bound on the node (same protocol and port, overlapping IP)."""
    for ip, protocol, port in sorted(wanted):
        for uip, uprotocol, uport in used:
            if port == uport and protocol == uprotocol and (ip == uip or "0.0.0.0" in (ip, uip)):
                return (ip, protocol, port)
    return None
