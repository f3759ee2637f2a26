"""`KubeClient`: the `kube.types.Kube` Protocol over the official `kubernetes` client.

Resource-generic: every call goes through `ApiClient.call_api` with the raw REST path from
`Resource.path()`, and objects travel as plain camelCase JSON dicts, exactly as the API serves them
(list items additionally get their `kind`/`apiVersion`, which the API leaves out of list responses).
Every failure is translated here, once, into `kube.errors` (plus `GoneError` for 410), so nothing
past this module sees an `ApiException`, an HTTP status or a urllib3 error.

Thread-safe: the only shared state is the `ApiClient`, whose urllib3 pool manager is thread-safe, so
one instance may serve a whole activity thread pool. Every request has a connect timeout and a read
timeout; a watch's read timeout outlasts its server-side `timeoutSeconds`.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from typing import Any

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException, OpenApiException

from kube import config
from kube.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    KubeError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
)
from kube.resources import POD, Resource
from kube.types import Obj, PatchType
from kube.watching import WatchDecodeError, decode_events, iter_lines

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0
# A watch's socket may stay quiet for its whole timeoutSeconds; allow this much beyond it.
WATCH_READ_SLACK = 15.0
# Page size for list(); the API server hands back a continue token per page.
LIST_PAGE_SIZE = 500

# Aliases: inside KubeClient the name `list` is the method, not the builtin.
ObjList = list[Obj]
PatchBody = Obj | list[Obj]
Query = list[tuple[str, str]]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


class GoneError(KubeError):
    """410 Gone: the resourceVersion asked for is older than the server keeps (a watch or a list
    continuation). Not retryable as is: list again and watch from the list's resourceVersion."""

    retryable = False
    status = 410


def error_for_status(status: int, body: object, context: str) -> KubeError:
    """The `kube.errors` exception for an HTTP error status and its `Status` body (a dict, or None).

    409 is AlreadyExistsError when the Status reason is AlreadyExists, otherwise ConflictError.
    """
    reason = message = ""
    if isinstance(body, dict):
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or "")
    text = f"{context}: {status} {reason or 'error'}" + (f": {message}" if message else "")
    if status == 404:
        return NotFoundError(text)
    if status == 409:
        already = reason == "AlreadyExists" or (reason != "Conflict" and "already exists" in message)
        return AlreadyExistsError(text) if already else ConflictError(text)
    if status == 410:
        return GoneError(text)
    if status == 429:
        return TooManyRequestsError(text)
    if status in (400, 405, 406, 413, 415, 422):
        return InvalidError(text, status=status)
    if status in (401, 403):
        return ForbiddenError(text, status=status)
    if status in (408, 504) or status >= 500 or status == 0:
        return ServerError(text, status=status or None)
    error = KubeError(text, status=status)
    error.retryable = False
    return error


def _decode(data: bytes, context: str) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError as exc:
        raise ServerError(f"{context}: the API server sent a body that is not JSON: {data[:200]!r}") from exc


def _with_type_meta(items: list[Obj], resource: Resource) -> list[Obj]:
    for item in items:
        item.setdefault("kind", resource.kind)
        item.setdefault("apiVersion", resource.api_version)
    return items


def _sort_key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _selectors(label_selector: str | None, field_selector: str | None) -> Query:
    query: Query = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


def _check_patch(patch: Obj | list[Obj], patch_type: str) -> str:
    if patch_type not in PATCH_CONTENT_TYPES:
        raise ValueError(f"patch_type {patch_type!r} is not one of {sorted(PATCH_CONTENT_TYPES)}")
    if patch_type == "json" and not isinstance(patch, list):
        raise ValueError("patch_type 'json' needs a list of RFC 6902 operations as the patch")
    if patch_type != "json" and not isinstance(patch, dict):
        raise ValueError(f"patch_type {patch_type!r} needs an object (dict) as the patch; use 'json' for a list")
    return PATCH_CONTENT_TYPES[patch_type]


def _metadata_name(obj: Obj, resource: Resource) -> tuple[str, str | None]:
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError(f"{resource.kind} to replace has no metadata.name; set it to the object's name")
    namespace = meta.get("namespace")
    if resource.namespaced and not namespace:
        raise ValueError(f"{resource.kind} {name!r} to replace has no metadata.namespace; set it")
    return name, namespace if resource.namespaced else None


class KubeClient:
    """The `kube.types.Kube` implementation. See the module docstring for the contract."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        self._api = api_client
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None) -> KubeClient:
        """A client from a kubeconfig (see `kube.config.api_client_from_kubeconfig`)."""
        return cls(config.api_client_from_kubeconfig(path, context))

    @classmethod
    def in_cluster(cls) -> KubeClient:
        """A client from the pod's service account (see `kube.config.api_client_in_cluster`)."""
        return cls(config.api_client_in_cluster())

    @classmethod
    def resolve(
        cls, kubeconfig: str | None = None, context: str | None = None, kubeconfig_flag: str = "--kubeconfig"
    ) -> KubeClient:
        """A client from the first source of kubectl's order: `kubeconfig`, KUBECONFIG, ~/.kube/config,
        in-cluster (see `kube.config.resolve_api_client`; KubeConfigError names what was tried)."""
        return cls(config.resolve_api_client(kubeconfig, context, kubeconfig_flag=kubeconfig_flag))

    @classmethod
    def for_url(cls, url: str) -> KubeClient:
        """A client for an unauthenticated API server, e.g. the devstack emulator."""
        return cls(config.api_client_for_url(url))

    def close(self) -> None:
        """Release pooled connections. The client must not be used afterwards."""
        self._api.close()

    # -- the Kube Protocol -------------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        obj: Obj = self._call("GET", resource.path(namespace, name))
        return obj

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjList:
        """Every matching object, fetched in pages, sorted by (namespace, name). If a continue token
        expires between pages (410), the list restarts unpaged so the result is one consistent view."""
        return self.list_with_version(resource, namespace, label_selector, field_selector)[0]

    def list_with_version(
        self,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[ObjList, str]:
        """`list`, and the list's resourceVersion (every page is served from the first page's snapshot)."""
        path = resource.path(namespace)
        query = _selectors(label_selector, field_selector)
        items: ObjList = []
        token = ""
        version = ""
        try:
            while True:
                page_query = [*query, ("limit", str(LIST_PAGE_SIZE))]
                if token:
                    page_query.append(("continue", token))
                page = self._call("GET", path, query=page_query)
                items.extend(page.get("items") or [])
                meta = page.get("metadata") or {}
                version = version or str(meta.get("resourceVersion") or "")
                token = meta.get("continue") or ""
                if not token:
                    break
        except GoneError:
            whole = self._call("GET", path, query=query)
            items = list(whole.get("items") or [])
            version = str((whole.get("metadata") or {}).get("resourceVersion") or "")
        return sorted(_with_type_meta(items, resource), key=_sort_key), version

    def create(self, resource: Resource, obj: Obj, namespace: str | None = None) -> Obj:
        if namespace is None and resource.namespaced:
            namespace = (obj.get("metadata") or {}).get("namespace")
        body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        created: Obj = self._call("POST", resource.path(namespace), body=body)
        return created

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: PatchBody,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
    ) -> Obj:
        content_type = _check_patch(patch, patch_type)
        path = resource.path(namespace, name, subresource)
        try:
            patched: Obj = self._call("PATCH", path, body=patch, content_type=content_type)
        except InvalidError as exc:
            # A failed `test` operation means the object changed since it was read (the API answers
            # 422 "test failed"); callers handle it like a stale resourceVersion.
            if patch_type == "json" and "test failed" in str(exc):
                raise ConflictError(str(exc)) from exc
            raise
        return patched

    def replace(self, resource: Resource, obj: Obj, subresource: str | None = None) -> Obj:
        name, namespace = _metadata_name(obj, resource)
        body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        replaced: Obj = self._call("PUT", resource.path(namespace, name, subresource), body=body)
        return replaced

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> None:
        options: Obj | None = None
        if grace_period_seconds is not None or preconditions:
            options = {"apiVersion": "v1", "kind": "DeleteOptions"}
            if grace_period_seconds is not None:
                options["gracePeriodSeconds"] = grace_period_seconds
            if preconditions:
                options["preconditions"] = dict(preconditions)
        self._call("DELETE", resource.path(namespace, name), body=options)

    def evict(self, namespace: str, name: str) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        self._call("POST", POD.path(namespace, name, "eviction"), body=body)

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 60,
    ) -> Generator[tuple[str, Obj], None, None]:
        """Yields (type, object) as the server sends them (ADDED, MODIFIED, DELETED and BOOKMARK, whose
        object carries only metadata.resourceVersion), until the server ends the watch after
        `timeout_seconds`. Raises GoneError when `resource_version` is too old (relist, then watch from
        the list's version), and the translated error for any other failure. Closing the generator
        early closes the connection."""
        if timeout_seconds < 1:
            raise ValueError(f"timeout_seconds must be at least 1, got {timeout_seconds}")
        query = [
            *_selectors(label_selector, field_selector),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(int(timeout_seconds))),
        ]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        path = resource.path(namespace)
        context = f"WATCH {path}"
        response = self._open("GET", path, query=query, read_timeout=timeout_seconds + WATCH_READ_SLACK)
        drained = False
        try:
            for event_type, obj in decode_events(iter_lines(self._chunks(response))):
                if event_type == "ERROR":
                    code = obj.get("code")
                    raise error_for_status(code if isinstance(code, int) else 500, obj, context)
                if event_type != "BOOKMARK":
                    _with_type_meta([obj], resource)
                yield event_type, obj
            drained = True
        except urllib3.exceptions.HTTPError as exc:
            raise ServerError(f"{context}: connection failed: {exc}") from exc
        except WatchDecodeError as exc:
            raise ServerError(f"{context}: {exc}") from exc
        finally:
            if not drained:  # a half-read stream cannot be reused: drop the connection
                response.close()
            response.release_conn()

    # -- transport ---------------------------------------------------------------------------------

    @staticmethod
    def _chunks(response: urllib3.HTTPResponse) -> Iterator[bytes]:
        # Chunked bodies arrive event by event; read1() hands over whatever is buffered otherwise.
        if response.chunked:
            yield from response.read_chunked(decode_content=True)
            return
        while chunk := response.read1(65536):
            yield chunk

    def _open(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: object = None,
        content_type: str = "application/json",
        read_timeout: float | None = None,
    ) -> urllib3.HTTPResponse:
        """Send one request; returns the open, successful response. Raises the translated error."""
        context = f"{method} {path}"
        headers = {"Accept": "application/json", "Content-Type": content_type}
        timeout = (self._connect_timeout, read_timeout or self._read_timeout)
        try:
            request = self._api.param_serialize(
                method, path, query_params=query or None, header_params=headers, body=body,
                auth_settings=["BearerToken"],
            )  # fmt: skip
            response: urllib3.HTTPResponse = self._api.call_api(*request, _request_timeout=timeout).response
        except ApiException as exc:
            raise error_for_status(exc.status or 0, _safe_json(exc.body), context) from exc
        except (OpenApiException, urllib3.exceptions.HTTPError) as exc:
            raise ServerError(f"{context}: request failed: {exc}") from exc
        if not 200 <= response.status <= 299:
            try:
                data = response.data
            except urllib3.exceptions.HTTPError:
                data = b""
            finally:
                response.release_conn()
            raise error_for_status(response.status, _safe_json(data), context)
        return response

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: object = None,
        content_type: str = "application/json",
    ) -> Any:
        """One request-response round trip; returns the decoded JSON body (None when empty)."""
        context = f"{method} {path}"
        response = self._open(method, path, query=query, body=body, content_type=content_type)
        try:
            data = response.data
        except urllib3.exceptions.HTTPError as exc:
            raise ServerError(f"{context}: reading the response failed: {exc}") from exc
        finally:
            response.release_conn()
        return _decode(data, context)


def _safe_json(data: object) -> object:
    if isinstance(data, bytes | str) and data:
        try:
            return json.loads(data)
        except ValueError:
            return None
    return None
