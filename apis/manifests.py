"""Reading Karpenter manifests: multi-document YAML with `${NAME}` placeholders (as upstream examples use
with envsubst), and turning each document into its API model.

    docs = load_documents(text, {"CLUSTER_NAME": "dev"}, source="nodepool.yaml")
    objects = [parse_api_object(d) for d in docs if is_api_object(d)]

Pure: it parses text it is given. Reading files (and expanding directories) is the callers' I/O, e.g.
`workers.cli.manifest_files.load_files`.

Syntax problems raise `ManifestError` naming the file and line; invalid objects raise `ApiValidationError`
with one `ValidationProblem` per field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pydantic
import yaml

from apis import ec2nodeclass, nodeclaim, nodepool
from apis.errors import ApiValidationError, ValidationProblem, describe_validation_error

ApiObject = nodepool.NodePool | nodeclaim.NodeClaim | ec2nodeclass.EC2NodeClass

KINDS: dict[tuple[str, str], type[ApiObject]] = {
    (nodepool.API_VERSION, nodepool.KIND): nodepool.NodePool,
    (nodeclaim.API_VERSION, nodeclaim.KIND): nodeclaim.NodeClaim,
    (ec2nodeclass.API_VERSION, ec2nodeclass.KIND): ec2nodeclass.EC2NodeClass,
}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")  # what a directory of manifests holds


class ManifestError(ValueError):
    """A manifest cannot be read: YAML syntax, an unset `${NAME}`, or a document that is not an object.
    `source` is the file name (or "<string>"), `line` the 1-based line when known."""

    def __init__(self, message: str, source: str = "<string>", line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.detail = message
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")


class UnknownKindError(ApiValidationError):
    """The document is not a NodePool, NodeClaim or EC2NodeClass of a supported apiVersion."""


def substitute(text: str, variables: Mapping[str, str], source: str = "<string>") -> str:
    """`${NAME}` replaced by variables[NAME]; an unset name raises ManifestError at its line."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            line = text.count("\n", 0, match.start()) + 1
            raise ManifestError(f"${{{name}}} is not set; pass a value for {name}", source, line)
        return variables[name]

    return _VARIABLE.sub(replace, text)


def load_documents(
    text: str, variables: Mapping[str, str] | None = None, *, source: str = "<string>"
) -> list[dict[str, Any]]:
    """The mapping documents of a multi-document YAML text, in order; empty documents are skipped.

    With `variables`, every `${NAME}` is substituted first (like envsubst, but an unset name is an error);
    without, the text is read as it is.
    """
    if variables is not None:
        text = substitute(text, variables, source)
    loader = yaml.SafeLoader(text)
    documents: list[dict[str, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            doc = loader.construct_document(node)
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise ManifestError(
                    f"expected a Kubernetes object (a mapping with apiVersion and kind), got a {type(doc).__name__}",
                    source,
                    node.start_mark.line + 1,
                )
            documents.append(doc)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "invalid YAML"
        raise ManifestError(f"invalid YAML: {problem}", source, mark.line + 1 if mark else None) from err
    except yaml.YAMLError as err:
        raise ManifestError(f"invalid YAML: {err}", source) from err
    finally:
        loader.dispose()
    return documents


def is_api_object(doc: Mapping[str, Any]) -> bool:
    """True for a NodePool, NodeClaim or EC2NodeClass of a supported apiVersion."""
    return (doc.get("apiVersion"), doc.get("kind")) in KINDS


def parse_api_object(doc: Mapping[str, Any]) -> ApiObject:
    """The document as its model. Raises UnknownKindError for other kinds or apiVersions, and
    ApiValidationError listing every problem for invalid objects."""
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    metadata = doc.get("metadata")
    name = str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""
    model = KINDS.get((str(api_version), str(kind)))
    if model is None:
        raise UnknownKindError([_unknown_kind(api_version, kind, name)])
    try:
        return model.model_validate(doc)
    except pydantic.ValidationError as err:
        raise ApiValidationError(describe_validation_error(str(kind), name, err, model)) from err


def _unknown_kind(api_version: object, kind: object, name: str) -> ValidationProblem:
    supported = ", ".join(f"{v} {k}" for v, k in KINDS)
    versions = sorted(v for v, k in KINDS if k == kind)
    if versions:
        message = f'apiVersion "{api_version}" is not supported for {kind}; use {versions[0]}'
        return ValidationProblem(kind=str(kind), name=name, field="apiVersion", message=message)
    message = f'unknown kind "{kind}" (apiVersion "{api_version}"); expected one of {supported}'
    return ValidationProblem(kind=str(kind), name=name, field="kind", message=message)
