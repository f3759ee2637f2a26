"""Apply manifests to the local stack's API server, like `kubectl apply` without the bookkeeping:
multi-document YAML of any kind the emulator serves, `${CLUSTER_NAME}` substituted, each object
created or, when it already exists, merge-patched.

Reading and substitution are `apis.manifests` (an unset `${NAME}` is an error at its line). Two kinds
of trouble, kept apart on purpose:
- `ManifestError`: the file cannot be applied at all (unreadable, not YAML, an unset variable, a
  document without a name, a kind the emulator does not serve). Raised before anything is applied.
- validation problems: a NodePool, EC2NodeClass or NodeClaim that the API models reject. Returned as
  messages, and the object is applied anyway, because the worker itself must answer an invalid
  NodePool with a status condition rather than the stack refusing it.
- refusals: an object the API server itself refuses (422 Invalid, e.g. a rule of its CRD, as on a real
  cluster). Returned as messages by `apply_all`, which applies the other objects, as `kubectl apply`
  reports each refused object and goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apis.errors import ApiValidationError
from apis.manifests import ManifestError, is_api_object, load_documents, parse_api_object
from devstack.kube.catalog import SERVED
from kube.errors import AlreadyExistsError, InvalidError
from kube.resources import Resource
from kube.types import Kube, Obj

__all__ = [
    "Manifest",
    "ManifestError",
    "apply_all",
    "apply_manifest",
    "expand_paths",
    "load_file",
    "load_text",
    "validate",
]

DEFAULT_NAMESPACE = "default"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

_RESOURCES: dict[tuple[str, str], Resource] = {
    (s.api_version, s.kind): Resource(s.group, s.version, s.plural, s.kind, s.namespaced) for s in SERVED
}


@dataclass(frozen=True)
class Manifest:
    """One document of a manifest, ready to apply."""

    source: str  # "path#index", for messages
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


def to_manifest(doc: Mapping[str, Any], source: str) -> Manifest:
    """The document with the resource it is served as. Raises ManifestError for a kind the emulator
    does not serve, a `List`, or a missing metadata.name."""
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not api_version or not kind:
        raise ManifestError(f"set both apiVersion and kind (got {api_version!r}, {kind!r})", source)
    if kind == "List":
        raise ManifestError("kind List is not supported; write one document per object", source)
    resource = _RESOURCES.get((str(api_version), str(kind)))
    if resource is None:
        served = ", ".join(sorted(f"{v} {k}" for v, k in _RESOURCES))
        raise ManifestError(f"the local stack does not serve {api_version} {kind}; it serves {served}", source)
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        raise ManifestError(f"{kind} needs metadata.name (or metadata.generateName)", source)
    return Manifest(source, resource, dict(doc))


def validate(manifest: Manifest) -> list[str]:
    """Problems the API models find in a NodePool, EC2NodeClass or NodeClaim (none for other kinds),
    each as `<source>: <Kind> "<name>": <field>: <message>`."""
    if not is_api_object(manifest.obj):
        return []
    try:
        parse_api_object(manifest.obj)
    except ApiValidationError as err:
        return [f"{manifest.source}: {problem.describe()}" for problem in err.problems]
    return []


def load_text(text: str, source: str, variables: Mapping[str, str]) -> tuple[list[Manifest], list[str]]:
    """Substitute and parse a manifest text. Returns (manifests, validation problems); raises
    ManifestError when the text cannot be applied."""
    docs = load_documents(text, variables, source=source)
    manifests = [to_manifest(doc, f"{source}#{index}") for index, doc in enumerate(docs)]
    problems = [problem for manifest in manifests for problem in validate(manifest)]
    return manifests, problems


def load_file(path: Path, variables: Mapping[str, str]) -> tuple[list[Manifest], list[str]]:
    """`load_text` of a file. Raises ManifestError when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ManifestError(f"cannot read the file: {err.strerror or err}", str(path)) from err
    return load_text(text, str(path), variables)


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given, and for each directory its `*.yaml`, `*.yml` and `*.json` files (not recursive)
    in name order, as `kubectl apply -f DIR` takes them. A path that is neither is kept (reading it
    then raises ManifestError)."""
    files: list[Path] = []
    for path in paths:
        if Path(path).is_dir():
            files += sorted(p for p in Path(path).iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file())
        else:
            files.append(Path(path))
    return files


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


def apply_all(kube: Kube, manifests: Iterable[Manifest]) -> list[str]:
    """Apply in order (put namespaces and classes before what uses them). Returns the refusals, each as
    `<source>: refused by the API server: <its message>`; other Kube errors propagate."""
    refused: list[str] = []
    for manifest in manifests:
        try:
            apply_manifest(kube, manifest)
        except InvalidError as err:
            refused.append(f"{manifest.source}: refused by the API server: {err}")
    return refused
