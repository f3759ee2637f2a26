"""Server-side ``Table`` rendering for ``kubectl get`` (Accept: ...;as=Table;g=meta.k8s.io).

Columns follow the real printers for the built-in kinds kubectl users look at most (pods,
nodes, deployments, replicasets, PDBs, namespaces, events) and the CRDs' additionalPrinterColumns
for the Karpenter kinds; every other kind gets NAME and AGE. Priority-1 columns show with ``-o wide``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from devstack.kube.catalog import ServedResource

Obj = dict[str, Any]


@dataclass(frozen=True)
class Column:
    name: str
    cell: Callable[[Obj, datetime.datetime], Any]
    priority: int = 0
    type: str = "string"


def human_duration(seconds: float) -> str:
    """kubectl's short age format: 45s, 5m30s, 3h, 2d4h, 1y20d."""
    s = int(seconds)
    if s < 0:
        return "0s"
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 730:
        return f"{days}d"
    years = days // 365
    return f"{years}y{days % 365}d" if years < 8 and days % 365 else f"{years}y"


def _age(obj: Obj, now: datetime.datetime) -> str:
    created = obj["metadata"].get("creationTimestamp")
    if not created:
        return "<unknown>"
    moment = datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    return human_duration((now - moment).total_seconds())


def _get(obj: Any, *path: str, default: Any = "") -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return default
        obj = obj[part]
    return obj if obj is not None else default


def _condition(obj: Obj, kind: str) -> str:
    for cond in _get(obj, "status", "conditions", default=[]) or []:
        if cond.get("type") == kind:
            return str(cond.get("status", ""))
    return ""


def _labelled(path: str) -> Callable[[Obj, datetime.datetime], Any]:
    return lambda o, _: _get(o, "metadata", "labels", default={}).get(path, "")


def _field(*path: str) -> Callable[[Obj, datetime.datetime], Any]:
    return lambda o, _: _get(o, *path)


def _pod_ready(pod: Obj, _: datetime.datetime) -> str:
    containers = _get(pod, "spec", "containers", default=[]) or []
    ready = sum(1 for c in _get(pod, "status", "containerStatuses", default=[]) or [] if c.get("ready"))
    return f"{ready}/{len(containers)}"


def _pod_status(pod: Obj, _: datetime.datetime) -> str:
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str(_get(pod, "status", "reason") or _get(pod, "status", "phase") or "Unknown")


def _pod_restarts(pod: Obj, _: datetime.datetime) -> int:
    return sum(int(c.get("restartCount", 0)) for c in _get(pod, "status", "containerStatuses", default=[]) or [])


def _node_status(node: Obj, _: datetime.datetime) -> str:
    ready = _condition(node, "Ready")
    status = {"True": "Ready", "False": "NotReady"}.get(ready, "Unknown")
    if _get(node, "spec", "unschedulable", default=False):
        status += ",SchedulingDisabled"
    return status


def _node_roles(node: Obj, _: datetime.datetime) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in _get(node, "metadata", "labels", default={}) if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _address(kind: str) -> Callable[[Obj, datetime.datetime], str]:
    def cell(node: Obj, _: datetime.datetime) -> str:
        for addr in _get(node, "status", "addresses", default=[]) or []:
            if addr.get("type") == kind:
                return str(addr.get("address", ""))
        return "<none>"

    return cell


def _images(obj: Obj, _: datetime.datetime) -> str:
    containers = _get(obj, "spec", "template", "spec", "containers", default=[]) or []
    return ",".join(str(c.get("image", "")) for c in containers)


def _event_object(ev: Obj, _: datetime.datetime) -> str:
    involved = ev.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(ev: Obj, now: datetime.datetime) -> str:
    stamp = ev.get("lastTimestamp") or ev.get("eventTime") or ev["metadata"].get("creationTimestamp")
    return _age({"metadata": {"creationTimestamp": str(stamp)[:19] + "Z"}}, now) if stamp else "<unknown>"


_NAME = Column("Name", lambda o, _: o["metadata"]["name"])
_AGE = Column("Age", _age, type="date")

_COLUMNS: dict[str, list[Column]] = {
    "Pod": [_NAME, Column("Ready", _pod_ready), Column("Status", _pod_status),
            Column("Restarts", _pod_restarts, type="integer"), _AGE,
            Column("IP", lambda o, _: _get(o, "status", "podIP") or "<none>", 1),
            Column("Node", lambda o, _: _get(o, "spec", "nodeName") or "<none>", 1),
            Column("Nominated Node", lambda o, _: _get(o, "status", "nominatedNodeName") or "<none>", 1),
            Column("Readiness Gates", lambda o, _: "<none>", 1)],
    "Node": [_NAME, Column("Status", _node_status), Column("Roles", _node_roles), _AGE,
             Column("Version", _field("status", "nodeInfo", "kubeletVersion")),
             Column("Internal-IP", _address("InternalIP"), 1), Column("External-IP", _address("ExternalIP"), 1),
             Column("OS-Image", _field("status", "nodeInfo", "osImage"), 1),
             Column("Kernel-Version", _field("status", "nodeInfo", "kernelVersion"), 1),
             Column("Container-Runtime", _field("status", "nodeInfo", "containerRuntimeVersion"), 1)],
    "Deployment": [_NAME,
                   Column("Ready", lambda o, _: f"{_get(o, 'status', 'readyReplicas', default=0)}/"
                                                f"{_get(o, 'spec', 'replicas', default=1)}"),
                   Column("Up-to-date", lambda o, _: _get(o, "status", "updatedReplicas", default=0), type="integer"),
                   Column("Available", lambda o, _: _get(o, "status", "availableReplicas", default=0),
                          type="integer"),
                   _AGE, Column("Images", _images, 1)],
    "ReplicaSet": [_NAME, Column("Desired", lambda o, _: _get(o, "spec", "replicas", default=1), type="integer"),
                   Column("Current", lambda o, _: _get(o, "status", "replicas", default=0), type="integer"),
                   Column("Ready", lambda o, _: _get(o, "status", "readyReplicas", default=0), type="integer"),
                   _AGE, Column("Images", _images, 1)],
    "PodDisruptionBudget": [_NAME, Column("Min Available", lambda o, _: _get(o, "spec", "minAvailable") or "N/A"),
                            Column("Max Unavailable", lambda o, _: _get(o, "spec", "maxUnavailable") or "N/A"),
                            Column("Allowed Disruptions",
                                   lambda o, _: _get(o, "status", "disruptionsAllowed", default=0), type="integer"),
                            _AGE],
    "Namespace": [_NAME, Column("Status", _field("status", "phase")), _AGE],
    "Event": [Column("Last Seen", _event_last_seen), Column("Type", _field("type")),
              Column("Reason", _field("reason")), Column("Object", _event_object),
              Column("Message", _field("message"))],
    "NodePool": [_NAME, Column("NodeClass", _field("spec", "template", "spec", "nodeClassRef", "name")),
                 Column("Nodes", _field("status", "nodes")), Column("Ready", lambda o, _: _condition(o, "Ready")),
                 _AGE, Column("Weight", _field("spec", "weight"), 1, "integer"),
                 Column("CPU", _field("status", "resources", "cpu"), 1),
                 Column("Memory", _field("status", "resources", "memory"), 1)],
    "NodeClaim": [_NAME, Column("Type", _labelled("node.kubernetes.io/instance-type")),
                  Column("Capacity", _labelled("karpenter.sh/capacity-type")),
                  Column("Zone", _labelled("topology.kubernetes.io/zone")),
                  Column("Node", _field("status", "nodeName")), Column("Ready", lambda o, _: _condition(o, "Ready")),
                  _AGE, Column("ImageID", _field("status", "imageID"), 1),
                  Column("ID", _field("status", "providerID"), 1),
                  Column("NodePool", _labelled("karpenter.sh/nodepool"), 1),
                  Column("NodeClass", _field("spec", "nodeClassRef", "name"), 1),
                  Column("Drifted", lambda o, _: _condition(o, "Drifted"), 1)],
    "EC2NodeClass": [_NAME, Column("Ready", lambda o, _: _condition(o, "Ready")), _AGE,
                     Column("Role", _field("spec", "role"), 1)],
    "CustomResourceDefinition": [_NAME, Column("Created At", _field("metadata", "creationTimestamp"), type="date")],
}  # fmt: skip


def wants_table(accept: str) -> bool:
    """True when the client prefers a meta.k8s.io Table (kubectl get does)."""
    first = accept.split(",")[0]
    return "as=Table" in first and "g=meta.k8s.io" in first


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table(
    res: ServedResource, objects: list[Obj], now: datetime.datetime, list_meta: Obj, include_object: str = "Metadata"
) -> Obj:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (``includeObject``: None, Metadata or Object)."""
    columns = _COLUMNS.get(res.kind, [_NAME, _AGE])
    definitions = [
        {"name": c.name, "type": c.type, "format": "name" if c is _NAME else "", "description": "",
         "priority": c.priority}
        for c in columns
    ]  # fmt: skip
    rows = []
    for obj in objects:
        row: Obj = {"cells": [c.cell(obj, now) for c in columns]}
        partial = _row_object(obj, include_object)
        if partial is not None:
            row["object"] = partial
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": definitions, "rows": rows}  # fmt: skip
