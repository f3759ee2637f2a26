"""Parse an API path into what it addresses: a discovery document or a resource (collection,
object or subresource), the way kube-apiserver's request-info resolver does.
"""

from __future__ import annotations

from dataclasses import dataclass

from devstack.kube import catalog, errors
from devstack.kube.catalog import ServedResource


@dataclass(frozen=True)
class Target:
    """What a path addresses. ``resource`` is None for discovery and other non-resource paths."""

    path: str
    resource: ServedResource | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    group: str | None = None  # set for /api[s]/<group>[/<version>] discovery paths
    version: str | None = None


def parse(path: str) -> Target:
    """Resolve ``path``; raises ``ApiError`` 404 for resource paths that are not served."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[1:]
    elif parts[:1] == ["apis"]:
        if len(parts) < 3:
            return Target(path, group=parts[1] if len(parts) == 2 else None)
        group, rest = parts[1], parts[2:]
    else:
        return Target(path)
    if not rest:
        return Target(path, group=group)
    version, rest = rest[0], rest[1:]
    if not rest:
        return Target(path, group=group, version=version)
    return _resource_target(path, group, version, rest)


def _resource_target(path: str, group: str, version: str, rest: list[str]) -> Target:
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2:] not in (["status"], ["finalize"]):
        namespace, rest = rest[1], rest[2:]
    plural, name = rest[0], rest[1] if len(rest) > 1 else None
    subresource = "/".join(rest[2:]) or None
    res = catalog.lookup(group, version, plural)
    if res is None or (namespace is not None and not res.namespaced):
        raise errors.endpoint_not_found(path)
    if subresource is not None and subresource not in res.subresources:
        raise errors.endpoint_not_found(path)
    return Target(path, res, namespace, name, subresource, group, version)
