"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) over plain JSON values.

Both return a new document and never modify their inputs. A JSON patch that cannot apply raises
``ApiError`` 422 naming the operation and path.
"""

from __future__ import annotations

import copy
from typing import Any

from devstack.kube.errors import ApiError


def clone(value: Any) -> Any:
    """A deep copy of a JSON value."""
    return copy.deepcopy(value)


def merge_patch(original: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _invalid(op: dict[str, Any], problem: str) -> ApiError:
    return ApiError(422, "Invalid", f"json patch {op.get('op')} operation at path {op.get('path')!r}: {problem}")


def _tokens(pointer: str, op: dict[str, Any]) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise _invalid(op, "a JSON pointer must be empty or start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list[Any], token: str, op: dict[str, Any], allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit():
        raise _invalid(op, f"{token!r} is not a list index")
    idx = int(token)
    if idx > len(container) or (idx == len(container) and not allow_end):
        raise _invalid(op, f"index {idx} is out of range")
    return idx


def _parent(doc: Any, tokens: list[str], op: dict[str, Any]) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, op, allow_end=False)]
        else:
            raise _invalid(op, "the path does not exist")
    return node


def _get(doc: Any, path: str, op: dict[str, Any]) -> Any:
    tokens = _tokens(path, op)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens, op), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, op, allow_end=False)]
    raise _invalid(op, "the path does not exist")


def _remove(doc: Any, path: str, op: dict[str, Any]) -> Any:
    tokens = _tokens(path, op)
    parent, last = _parent(doc, tokens, op), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, op, allow_end=False))
    raise _invalid(op, "the path does not exist")


def _add(doc: Any, path: str, value: Any, op: dict[str, Any], replace: bool) -> Any:
    tokens = _tokens(path, op)
    if not tokens:
        return clone(value)
    parent, last = _parent(doc, tokens, op), tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise _invalid(op, "the path does not exist")
        parent[last] = clone(value)
    elif isinstance(parent, list):
        idx = _index(parent, last, op, allow_end=not replace)
        if replace:
            parent[idx] = clone(value)
        else:
            parent.insert(idx, clone(value))
    else:
        raise _invalid(op, "the parent of the path is not an object or a list")
    return doc


def json_patch(original: Any, operations: Any) -> Any:
    """RFC 6902: apply ``add``/``remove``/``replace``/``move``/``copy``/``test`` in order."""
    if not isinstance(operations, list):
        raise ApiError(400, "BadRequest", "a json patch body must be a JSON list of operations")
    doc = clone(original)
    for op in operations:
        if not isinstance(op, dict) or "path" not in op:
            raise ApiError(400, "BadRequest", f"json patch operation {op!r} needs 'op' and 'path'")
        kind, path = op.get("op"), op["path"]
        if kind == "add":
            doc = _add(doc, path, op.get("value"), op, replace=False)
        elif kind == "replace":
            doc = _add(doc, path, op.get("value"), op, replace=True)
        elif kind == "remove":
            _remove(doc, path, op)
        elif kind in ("move", "copy"):
            value = _get(doc, op.get("from", ""), op)
            if kind == "move":
                _remove(doc, op["from"], op)
            doc = _add(doc, path, value, op, replace=False)
        elif kind == "test":
            if _get(doc, path, op) != op.get("value"):
                raise _invalid(op, f"test failed: the value is not {op.get('value')!r}")
        else:
            raise ApiError(
                400, "BadRequest", f"json patch operation {kind!r} is not one of add, remove, replace, move, copy, test"
            )
    return doc
