"""Kubernetes manifests (already-loaded dicts) into a `SchedulingInput`, for the dry run.

Workloads are expanded into the pods their controllers would create, with deterministic names:
Deployment, ReplicaSet and StatefulSet `<name>-<i>` for i < replicas (default 1), Job `<name>-<i>` for
i < parallelism (default 1); StatefulSet volumeClaimTemplates become unbound PVCs `<claim>-<name>-<i>`.
Pods with spec.nodeName are bound to that Node. `List` objects are unpacked. Invalid objects are reported
(`Kind "name": field: problem`) and left out; everything else is still simulated.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from apis.ec2nodeclass import EC2NodeClass
from apis.errors import describe_validation_error
from apis.instancetype import InstanceType
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from scheduling.types import SchedulingInput

Obj = dict[str, Any]
WORKLOADS = ("Deployment", "ReplicaSet", "StatefulSet", "Job")
MAX_REPLICAS = 100_000
IGNORED_KINDS = frozenset(
    {"Service", "ConfigMap", "Secret", "ServiceAccount", "PodDisruptionBudget", "Ingress", "Role",
     "RoleBinding", "ClusterRole", "ClusterRoleBinding", "HorizontalPodAutoscaler", "NetworkPolicy",
     "PriorityClass", "CustomResourceDefinition", "CSINode", "CSIDriver"}
)  # fmt: skip
LISTS = {
    "PersistentVolumeClaim": "persistent_volume_claims",
    "PersistentVolume": "persistent_volumes",
    "StorageClass": "storage_classes",
    "RuntimeClass": "runtime_classes",
    "DaemonSet": "daemonsets",
    "Node": "nodes",
    "Namespace": "namespaces",
}


@dataclass
class Expanded:
    """What the manifests hold, plus one message per object that could not be used."""

    input: SchedulingInput
    errors: list[str] = field(default_factory=list)


def _name(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name") or "<unnamed>"
    return f"{namespace}/{name}" if namespace else str(name)


def _expand_workload(doc: Mapping[str, Any], kind: str) -> tuple[list[Obj], list[Obj]]:
    """(pods, pvcs) the controller would create."""
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    name = str(meta.get("name") or "")
    namespace = meta.get("namespace") or "default"
    if not name:
        raise ValueError("metadata.name: required")
    count = spec.get("parallelism", 1) if kind == "Job" else spec.get("replicas", 1)
    if not isinstance(count, int) or count < 0 or count > MAX_REPLICAS:
        field_name = "parallelism" if kind == "Job" else "replicas"
        raise ValueError(f"spec.{field_name}: expected a whole number from 0 to {MAX_REPLICAS}, got {count!r}")
    template = spec.get("template") or {}
    if not (template.get("spec") or {}).get("containers"):
        raise ValueError("spec.template.spec.containers: a pod template needs at least one container")
    pods: list[Obj] = []
    pvcs: list[Obj] = []
    for index in range(count):
        pod_name = f"{name}-{index}"
        pod_spec = copy.deepcopy(template.get("spec") or {})
        if kind == "StatefulSet":
            for vct in spec.get("volumeClaimTemplates") or []:
                claim = str((vct.get("metadata") or {}).get("name"))
                claim_name = f"{claim}-{name}-{index}"
                pvcs.append({"metadata": {"name": claim_name, "namespace": namespace}, "spec": vct.get("spec") or {}})
                volumes = pod_spec.setdefault("volumes", [])
                volumes.append({"name": claim, "persistentVolumeClaim": {"claimName": claim_name}})
        pod_meta = {
            "name": pod_name,
            "namespace": namespace,
            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
            "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
        }
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec})
    return pods, pvcs


def _flatten(docs: Iterable[Any]) -> Iterable[Any]:
    for doc in docs:
        if isinstance(doc, Mapping) and doc.get("kind") == "List":
            yield from _flatten(doc.get("items") or [])
        elif doc is not None:
            yield doc


def _model(kind: str, name: str, model: type[BaseModel], doc: Mapping[str, Any], errors: list[str]) -> Any:
    try:
        return model.model_validate(doc)
    except ValidationError as err:
        errors.extend(problem.describe() for problem in describe_validation_error(kind, name, err, model))
        return None


def expand(docs: Iterable[Any], instance_types: list[InstanceType]) -> Expanded:
    """Sort the objects into a SchedulingInput; expand workloads; report objects that cannot be used."""
    errors: list[str] = []
    lists: dict[str, list[Any]] = {
        "pods": [],
        "bound_pods": [],
        "node_pools": [],
        "node_classes": [],
        "node_claims": [],
        **{attr: [] for attr in LISTS.values()},
    }
    models: dict[str, tuple[type[BaseModel], str]] = {
        "NodePool": (NodePool, "node_pools"),
        "EC2NodeClass": (EC2NodeClass, "node_classes"),
        "NodeClaim": (NodeClaim, "node_claims"),
    }
    for index, doc in enumerate(_flatten(docs)):
        if not isinstance(doc, Mapping):
            errors.append(f"document {index}: expected a Kubernetes object (a mapping), got {type(doc).__name__}")
            continue
        kind = str(doc.get("kind") or "")
        name = _name(doc)
        if kind in models:
            model, attr = models[kind]
            parsed = _model(kind, name, model, doc, errors)
            if parsed is not None:
                lists[attr].append(parsed)
        elif kind == "Pod":
            target = "bound_pods" if (doc.get("spec") or {}).get("nodeName") else "pods"
            lists[target].append(dict(doc))
        elif kind in WORKLOADS:
            _add_workload(doc, kind, name, lists, errors)
        elif kind in LISTS:
            lists[LISTS[kind]].append(dict(doc))
        elif kind and kind not in IGNORED_KINDS:
            errors.append(f'{kind} "{name}": kind not simulated; ignored')
        elif not kind:
            errors.append(f"document {index} ({name}): kind: required")
    _dedupe_names(lists, errors)
    return Expanded(SchedulingInput(instance_types=instance_types, **lists), errors)


def _add_workload(doc: Mapping[str, Any], kind: str, name: str, lists: dict[str, list[Any]], errors: list[str]) -> None:
    """The workload's pods and volume claims into `lists`, else why not into `errors`."""
    try:
        pods, pvcs = _expand_workload(doc, kind)
    except ValueError as err:
        errors.append(f'{kind} "{name}": {err}')
        return
    lists["pods"].extend(pods)
    lists["persistent_volume_claims"].extend(pvcs)


def _dedupe_names(lists: dict[str, list[Any]], errors: list[str]) -> None:
    """Two objects of one kind with the same name: the later one replaces the earlier, with a note."""
    for attr in ("node_pools", "node_classes"):
        # Later definitions replace earlier ones, as `kubectl apply -f a -f b` would.
        position: dict[str, int] = {}
        kept: list[Any] = []
        for obj in lists[attr]:
            if obj.name in position:
                errors.append(f'{obj.kind} "{obj.name}": defined again; the later definition is used')
                kept[position[obj.name]] = obj
                continue
            position[obj.name] = len(kept)
            kept.append(obj)
        lists[attr] = kept
