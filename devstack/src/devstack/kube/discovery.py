"""Discovery documents (/api, /apis, /api/v1, /apis/<group>[/<version>], /version) built from the catalog.

kubectl resolves resource names, short names and categories ("kubectl get karpenter") through
these documents, so every served resource and subresource is listed with its verbs.
"""

from __future__ import annotations

from typing import Any

from devstack.kube.catalog import SERVED, ServedResource, group_versions

VERSION_INFO: dict[str, str] = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0",
    "gitCommit": "70d3cc986aa8221cd1dfb1121852688902d3bf53",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T17:57:32Z",
    "goVersion": "go1.23.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}

# subresource -> (kind, group, version, verbs) when it differs from the parent's kind.
_SUBRESOURCES: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "eviction": ("Eviction", "policy", "v1", ("create",)),
    "binding": ("Binding", "", "v1", ("create",)),
    "scale": ("Scale", "autoscaling", "v1", ("get", "patch", "update")),
}


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group(name: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{g}/{v}", "version": v} for g, v in group_versions() if g == name]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


def api_group_list() -> dict[str, Any]:
    names: list[str] = []
    for g, _ in group_versions():
        if g not in names:
            names.append(g)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(n) for n in names]}


def api_group(name: str) -> dict[str, Any] | None:
    """The APIGroup document, or None when the group is not served."""
    if not any(g == name for g, _ in group_versions()):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)}


def _entry(res: ServedResource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": res.plural,
        "singularName": res.singular,
        "namespaced": res.namespaced,
        "kind": res.kind,
        "verbs": list(res.verbs),
    }
    if res.short_names:
        entry["shortNames"] = list(res.short_names)
    if res.categories:
        entry["categories"] = list(res.categories)
    return entry


def _sub_entry(res: ServedResource, sub: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": f"{res.plural}/{sub}", "singularName": "", "namespaced": res.namespaced}
    if sub in _SUBRESOURCES:
        kind, group, version, verbs = _SUBRESOURCES[sub]
        entry.update(kind=kind, verbs=list(verbs))
        if group:
            entry.update(group=group, version=version)
    else:
        entry.update(kind=res.kind, verbs=["get", "patch", "update"])
    return entry


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    """The APIResourceList of one group/version (group "" = core), or None when not served."""
    served = [r for r in SERVED if r.group == group and r.version == version]
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for res in served:
        resources.append(_entry(res))
        resources.extend(_sub_entry(res, sub) for sub in res.subresources)
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def root_paths() -> dict[str, Any]:
    paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
    for g, v in group_versions():
        paths.extend([f"/apis/{g}", f"/apis/{g}/{v}"])
    return {"paths": sorted(set(paths))}
