"""The Kubernetes boundary: a resource-generic client over plain JSON objects (camelCase dicts,
exactly as the API serves them), as a Protocol.

Implementation: `kube.client.KubeClient` over the official `kubernetes` client (`ApiClient.call_api`).
Methods are synchronous; activities run them in threads. Errors are `kube.errors` types only.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any, Literal, Protocol

from kube.resources import Resource

Obj = dict[str, Any]
PatchType = Literal["merge", "strategic", "json"]


class WatchEvent(Protocol):
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: Obj


class Kube(Protocol):
    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        """The object. Raises NotFoundError."""
        ...

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """Objects in one namespace (or all when None), sorted by (namespace, name)."""
        ...

    def list_with_version(
        self,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[builtins.list[Obj], str]:
        """`list`, and the list's resourceVersion: a watch from it sends every change made after the list."""
        ...

    def create(self, resource: Resource, obj: Obj, namespace: str | None = None) -> Obj:
        """Create; returns the stored object. Raises AlreadyExistsError when the name is taken."""
        ...

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Obj | builtins.list[Obj],
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
    ) -> Obj:
        """Patch (merge, strategic or JSON patch), optionally the `status` subresource. Raises NotFoundError,
        ConflictError (a JSON patch `test` or a resourceVersion in the body that is stale)."""
        ...

    def replace(self, resource: Resource, obj: Obj, subresource: str | None = None) -> Obj:
        """PUT the whole object; its metadata.resourceVersion must be current or ConflictError."""
        ...

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> None:
        """Delete (sets deletionTimestamp when finalizers remain). NotFoundError when already gone.
        `grace_period_seconds` overrides a pod's spec.terminationGracePeriodSeconds. `preconditions`
        (`uid`, `resourceVersion`: DeleteOptions.preconditions) that the object does not match give
        ConflictError, so a same-named replacement object is never deleted."""
        ...

    def evict(self, namespace: str, name: str) -> None:
        """POST pods/eviction. Raises TooManyRequestsError when a PodDisruptionBudget refuses, NotFoundError
        when the pod is gone."""
        ...

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 60,
    ) -> Iterator[tuple[str, Obj]]:
        """Yields (event type, object) until the server ends the watch after `timeout_seconds`."""
        ...
