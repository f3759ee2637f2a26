"""Strategic merge patch for the built-in kinds, with the real patch strategies of the lists
nodeflow touches.

Lists merge by key where Kubernetes declares ``patchStrategy: merge``: ``status.conditions`` and
``status.addresses`` by ``type``, ``metadata.ownerReferences`` by ``uid``, containers, volumes and
env by ``name``, ports by ``containerPort``, volume mounts by ``mountPath``; ``metadata.finalizers``
is a merged set of strings. Every other list is atomic and replaced whole, as in the real API:
notably ``spec.taints`` (NodeSpec.Taints has no patch strategy, which is also what makes
``kubectl taint k:NoSchedule-`` work). Directives: ``$patch: delete|replace|merge``,
``$deleteFromPrimitiveList/<field>``, ``$setElementOrder/<field>`` and ``$retainKeys``.
"""

from __future__ import annotations

from typing import Any

from devstack.kube.errors import bad_request
from devstack.kube.patches import clone

_SET = "<set>"

# (name of the enclosing field, list field) -> merge key, or _SET for a merged list of scalars.
# Items of a list are "enclosed" by the list's own field name (a container's env -> ("containers", "env")).
MERGE_KEYS: dict[tuple[str, str], str] = {
    ("metadata", "finalizers"): _SET,
    ("metadata", "ownerReferences"): "uid",
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "ephemeralContainers"): "name",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("containers", "env"): "name",
    ("initContainers", "env"): "name",
    ("containers", "ports"): "containerPort",
    ("initContainers", "ports"): "containerPort",
    ("containers", "volumeMounts"): "mountPath",
    ("initContainers", "volumeMounts"): "mountPath",
}

_DELETE_PRIMITIVES = "$deleteFromPrimitiveList/"
_ELEMENT_ORDER = "$setElementOrder/"


def strategic_merge(original: Any, patch: Any) -> Any:
    """Apply a strategic merge patch to a whole object; inputs are not modified."""
    if not isinstance(patch, dict):
        raise bad_request("a strategic merge patch body must be a JSON object")
    return _merge_map(original if isinstance(original, dict) else {}, patch, "")


def _merge_map(original: dict[str, Any], patch: dict[str, Any], name: str) -> Any:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive not in (None, "merge"):
        raise bad_request(f"unknown $patch directive {directive!r} in field {name or '<root>'}")
    result = dict(original)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith(_ELEMENT_ORDER):
            orders[key[len(_ELEMENT_ORDER) :]] = value or []
        elif key.startswith(_DELETE_PRIMITIVES):
            field = key[len(_DELETE_PRIMITIVES) :]
            result[field] = [v for v in result.get(field) or [] if v not in (value or [])]
        else:
            _merge_field(result, key, value, name)
    if "$retainKeys" in patch:
        keep = set(patch["$retainKeys"] or ())
        result = {k: v for k, v in result.items() if k in keep}
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _reorder(result[field], order, MERGE_KEYS.get((name, field)))
    return result


def _merge_field(result: dict[str, Any], key: str, value: Any, name: str) -> None:
    """Merge one field of a patch into ``result`` (a map named ``name``) in place."""
    if value is None or (isinstance(value, dict) and value.get("$patch") == "delete"):
        result.pop(key, None)
    elif isinstance(value, dict):
        current = result.get(key)
        result[key] = _merge_map(current if isinstance(current, dict) else {}, value, key)
    elif isinstance(value, list):
        result[key] = _merge_list(result.get(key), value, name, key)
    else:
        result[key] = value


def _merge_list(original: Any, patch: list[Any], parent: str, field: str) -> list[Any]:
    strategy = MERGE_KEYS.get((parent, field))
    current = original if isinstance(original, list) else []
    if strategy is None:
        if any(isinstance(item, dict) and "$patch" in item for item in patch):
            raise bad_request(
                f"field {parent}.{field} is an atomic list: $patch directives are not allowed "
                "in it; send the whole list instead"
            )
        return clone(patch)
    if strategy == _SET:
        merged = list(current)
        merged.extend(v for v in patch if v not in merged)
        return merged
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [clone(item) for item in patch if not (isinstance(item, dict) and "$patch" in item)]
    return _merge_keyed(current, patch, field, strategy)


def _merge_keyed(current: list[Any], patch: list[Any], field: str, key: str) -> list[Any]:
    merged = list(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"field {field}: list item {item!r} does not contain the declared merge key {key!r}")
        positions = [
            i for i, existing in enumerate(merged) if isinstance(existing, dict) and existing.get(key) == item[key]
        ]
        if item.get("$patch") == "delete":
            merged = [e for i, e in enumerate(merged) if i not in positions]
        elif positions:
            merged[positions[0]] = _merge_map(merged[positions[0]], item, field)
        else:
            merged.append(_merge_map({}, item, field))
    return merged


def _reorder(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """Order items as ``$setElementOrder`` lists them; unlisted items keep their place after them."""

    def ident(item: Any) -> Any:
        return item.get(key) if key and key != _SET and isinstance(item, dict) else item

    wanted = [ident(o) for o in order]
    listed = sorted((i for i in items if ident(i) in wanted), key=lambda i: wanted.index(ident(i)))
    return listed + [i for i in items if ident(i) not in wanted]
