"""Apply manifests to the local stack's API server, like `kubectl apply` without the bookkeeping:
multi-document YAML of any kind the emulator serves, `${CLUSTER_NAME}` substituted, each object
created or, when it already exists, merge-patched.

Two kinds of trouble, kept apart on purpose:
- `ManifestError`: the file cannot be applied at all (unreadable, not YAML, a document without
  apiVersion/kind/name, a kind the emulator does not serve). Raised before anything is applied.
- validation problems: a NodePool, EC2NodeClass or NodeClaim that the API models reject. Returned as
  messages, and the object is applied anyway, because the worker itself must answer an invalid
  NodePool with a status condition rather than the stack refusing it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from apis.ec2nodeclass import EC2NodeClass
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool
from devstack.kube.catalog import SERVED
from kube.errors import AlreadyExistsError
from kube.resources import Resource
from kube.types import Kube, Obj

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_NAMESPACE = "default"

# The kinds whose spec the worker interprets; validated with the API models before applying.
_MODELS: dict[tuple[str, str], type[BaseModel]] = {
    ("karpenter.sh/v1", "NodePool"): NodePool,
    ("karpenter.sh/v1", "NodeClaim"): NodeClaim,
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): EC2NodeClass,
}

_RESOURCES: dict[tuple[str, str], Resource] = {
    (s.api_version, s.kind): Resource(s.group, s.version, s.plural, s.kind, s.namespaced) for s in SERVED
}


class ManifestError(ValueError):
    """A manifest that cannot be applied; the message names the file, the document and the fix."""


@dataclass(frozen=True)
class Manifest:
    """One document of a manifest file, ready to apply."""

    source: str  # "path#index" for messages
    resource: Resource
    obj: Obj

    @property
    def name(self) -> str:
        meta = self.obj.get("metadata") or {}
        return str(meta.get("name") or meta.get("generateName") or "")

    @property
    def namespace(self) -> str | None:
        if not self.resource.namespaced:
            return None
        return str((self.obj.get("metadata") or {}).get("namespace") or DEFAULT_NAMESPACE)

    @property
    def label(self) -> str:
        return f"{self.source}: {self.resource.kind} {self.name}"


def substitute(text: str, variables: Mapping[str, str]) -> tuple[str, list[str]]:
    """Replace `${NAME}` for every NAME in `variables`. Other `${...}` stay as written and come back
    as problems (sorted, one per name), since they are almost always a forgotten setting."""
    unknown: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in variables:
            return variables[name]
        unknown.add(name)
        return match.group(0)

    result = _VARIABLE.sub(replace, text)
    known = ", ".join(f"${{{n}}}" for n in sorted(variables))
    problems = [
        f"unknown variable ${{{name}}} left as is (the dev stack substitutes {known})" for name in sorted(unknown)
    ]
    return result, problems


def parse_manifests(text: str, source: str) -> list[Manifest]:
    """Every non-empty document of a multi-document YAML text. Raises ManifestError."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source}: not valid YAML: {exc}") from exc
    manifests = []
    for index, doc in enumerate(documents):
        if doc is None:
            continue
        manifests.append(_manifest(doc, f"{source}#{index}"))
    return manifests


def _manifest(doc: Any, source: str) -> Manifest:
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: a document must be a mapping with apiVersion, kind and metadata")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not api_version or not kind:
        raise ManifestError(f"{source}: set both apiVersion and kind (got {api_version!r}, {kind!r})")
    if kind == "List":
        raise ManifestError(f"{source}: kind List is not supported; write one document per object")
    resource = _RESOURCES.get((str(api_version), str(kind)))
    if resource is None:
        served = ", ".join(sorted(f"{v} {k}" for v, k in _RESOURCES))
        raise ManifestError(f"{source}: the local stack does not serve {api_version} {kind}; it serves {served}")
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        raise ManifestError(f"{source}: {kind} needs metadata.name (or metadata.generateName)")
    return Manifest(source, resource, doc)


def validate(manifest: Manifest) -> list[str]:
    """Problems the API models find in a NodePool, EC2NodeClass or NodeClaim (empty for other kinds)."""
    model = _MODELS.get((manifest.resource.api_version, manifest.resource.kind))
    if model is None:
        return []
    try:
        model.model_validate(manifest.obj)
    except ValidationError as exc:
        return [
            f"{manifest.label}: {'.'.join(str(p) for p in err['loc']) or '(object)'}: {err['msg']}"
            for err in exc.errors()
        ]
    return []


def load_file(path: Path, variables: Mapping[str, str]) -> tuple[list[Manifest], list[str]]:
    """Read, substitute and parse one file. Returns (manifests, problems); raises ManifestError."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the file: {exc.strerror or exc}") from exc
    return load_text(text, str(path), variables)


def load_text(text: str, source: str, variables: Mapping[str, str]) -> tuple[list[Manifest], list[str]]:
    """Substitute and parse a manifest text. Returns (manifests, problems); raises ManifestError."""
    text, problems = substitute(text, variables)
    problems = [f"{source}: {p}" for p in problems]
    manifests = parse_manifests(text, source)
    for manifest in manifests:
        problems += validate(manifest)
    return manifests, problems


def apply_manifest(kube: Kube, manifest: Manifest) -> Obj:
    """Create the object, or merge-patch it when one of that name exists. Returns the stored object."""
    obj = manifest.obj
    if manifest.resource.namespaced:
        obj = {**obj, "metadata": {**obj["metadata"], "namespace": manifest.namespace}}
    try:
        return kube.create(manifest.resource, obj, manifest.namespace)
    except AlreadyExistsError:
        meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
        return kube.patch(manifest.resource, meta["name"], {**obj, "metadata": meta}, manifest.namespace, "merge")


def apply_all(kube: Kube, manifests: Iterable[Manifest]) -> list[Obj]:
    """Apply in order (put namespaces and classes before what uses them). Kube errors propagate."""
    return [apply_manifest(kube, m) for m in manifests]
