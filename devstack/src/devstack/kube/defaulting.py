"""Structural defaulting of custom resources from their CRD's ``openAPIV3Schema``, as kube-apiserver does.

Pure functions over JSON values. The rules are those of apiextensions-apiserver's
``structuraldefaulting.Default`` and ``PruneNonNullableNullsWithoutDefaults`` (Kubernetes docs:
"Defaulting" in "Extend the Kubernetes API with CustomResourceDefinitions"):

- a property's ``default`` is applied only when the property is absent from an object that exists
  (or is ``null`` and the property is not ``nullable: true``); given values are never overwritten;
- a ``null`` for a property that is not ``nullable`` and has no ``default`` is removed (pruned);
- after a default has created a value, the defaults inside it apply to it too; defaults under
  ``items`` apply to every array element, under ``additionalProperties`` to every map value;
- without a schema (or where a value's type does not match its schema) nothing changes.

Applying the defaults twice gives the same result as applying them once.

``crd_schemas`` turns a stored ``CustomResourceDefinition`` into the schemas it declares, keyed like
``ServedResource.key`` (``<group>/<version>/<plural>``), so the store can default on every write.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]


def apply_defaults(schema: Schema | None, value: Any) -> Any:
    """``value`` with the schema's structural defaults applied; the argument is never mutated.

    ``schema`` is an ``openAPIV3Schema`` node (for a whole object: the version's root schema).
    Returns ``value`` itself when ``schema`` is None.
    """
    if not schema:
        return value
    result = copy.deepcopy(value)
    _default(result, schema)
    return result


def _default(value: Any, schema: Schema) -> None:
    """Default ``value`` in place (a dict or list; scalars carry no defaults)."""
    if isinstance(value, dict):
        _default_object(value, schema)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _default(item, items)


def _default_object(value: dict[str, Any], schema: Schema) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    for key, prop in properties.items():
        if isinstance(prop, dict) and value.get(key) is None:
            _default_property(value, key, prop)
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        prop = properties.get(key)
        if isinstance(prop, dict):
            _default(item, prop)
        elif key not in properties and isinstance(extra, dict):
            _default(item, extra)


def _default_property(value: dict[str, Any], key: str, prop: Schema) -> None:
    """``value[key]`` is absent or null: default it, or prune a null the schema does not admit."""
    nullable = bool(prop.get("nullable", False))
    if key in value and nullable:
        return  # an admitted null is kept, even with a default
    if "default" in prop:
        value[key] = copy.deepcopy(prop["default"])
    elif key in value:
        del value[key]


def crd_schemas(crd: dict[str, Any]) -> dict[str, Schema]:
    """``<group>/<version>/<plural>`` -> ``openAPIV3Schema`` for every version of a CRD with a schema.

    Tolerates malformed documents (the emulator does not validate CRDs): what cannot be read is
    left out.
    """
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return {}
    group, names = spec.get("group"), spec.get("names")
    plural = names.get("plural") if isinstance(names, dict) else None
    if not isinstance(group, str) or not isinstance(plural, str):
        return {}
    schemas: dict[str, Schema] = {}
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or not isinstance(version.get("name"), str):
            continue
        wrapper = version.get("schema")
        schema = wrapper.get("openAPIV3Schema") if isinstance(wrapper, dict) else None
        if isinstance(schema, dict):
            api_version = f"{group}/{version['name']}" if group else version["name"]
            schemas[f"{api_version}/{plural}"] = schema
    return schemas
