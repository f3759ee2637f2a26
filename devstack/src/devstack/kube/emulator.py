"""``ApiServerEmulator``: a kmock ``KubernetesEmulator`` whose state and REST semantics are ours.

kmock provides the HTTP server, the request log and the reaction DSL; this class replaces its
object handling with :class:`~devstack.kube.store.ObjectStore` and the modules beside it
(routing, verbs, watch, disruption, subresources, discovery).

Fault injection uses kmock's DSL, and reactions run *before* the emulator's own handling, so a
refused request changes no state::

    emu["post /api/v1/namespaces/default/pods"][:1] << 503          # the next pod create fails once
    emu[kmock.action.LIST, kmock.resource("v1/nodes")][:2] << 429    # two node lists are throttled
    emu[kmock.action.WATCH, kmock.resource("v1/pods")][:1] << 410    # one watch request is refused

To drop live watch connections (clients must re-list/re-watch), call ``emu.drop_watches()``.
Out of process, the same faults are set over HTTP at ``/_nodeflow/faults`` on the emulator's port
(rules in ``emu.faults``, checked before reactions and handling; see :mod:`devstack.kube.faults`).
The request log (``list(emu)``, ``emu["get /api/v1/pods"]``) keeps the newest
``request_log_limit`` requests, so slice reactions count within that window.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import enums, parsing, rendering

from devstack.kube import discovery, errors, protobuf, rbac, routing, subresources, tables, verbs, watch
from devstack.kube import faults as injected
from devstack.kube.access import Access
from devstack.kube.catalog import NAMESPACE, REVIEWS, ServedResource
from devstack.kube.disruption import evict
from devstack.kube.routing import Target
from devstack.kube.store import ObjectStore

log = logging.getLogger(__name__)

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Who a request is without authentication (``access`` None): an administrator, as the reviews answer.
UNAUTHENTICATED_ADMIN = rbac.User("admin", (rbac.MASTERS, rbac.AUTHENTICATED))
_USER_KEY = aiohttp.web.RequestKey("nodeflow.user", rbac.User)  # the authenticated user, kept on the request


def _reply(code: int, body: Any) -> aiohttp.web.Response:
    return aiohttp.web.Response(status=code, body=json.dumps(body).encode(), content_type="application/json")


@attrs.define(kw_only=True)
class ApiServerEmulator(kmock.KubernetesEmulator):
    """The emulated kube-apiserver; ``store`` holds every object (for in-process assertions)."""

    store: ObjectStore = attrs.field(factory=ObjectStore)
    request_log_limit: int = 10_000
    faults: injected.KubeFaults = attrs.field(factory=injected.KubeFaults)
    # Bearer-token authentication and RBAC (devstack.kube.access); None serves every request unchecked.
    access: Access | None = None

    def __attrs_post_init__(self) -> None:
        # kmock's own fallbacks are not registered: every request the DSL does not catch is
        # served by _serve below, so user reactions are the only entries in self._payloads.
        for name in INITIAL_NAMESPACES:
            if self.store.find(NAMESPACE, None, name) is None:
                self.store.create(NAMESPACE, None, {"metadata": {"name": name}})

    def drop_watches(self, resource: ServedResource | None = None) -> int:
        """End every live watch stream (or those of one resource); returns how many were ended."""
        return self.store.close_watches(resource)

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """The aiohttp entry point: record the request, then let reactions or the emulator serve it.

        Replaces kmock's own entry, whose path parser fails on some valid API paths
        (e.g. ``/api/v1/namespaces``); API errors are answered as Status bodies and other
        exceptions are logged and answered as 500 InternalError.
        """
        try:
            if raw_request.path == injected.FAULTS_PATH:
                code, body = injected.control(
                    self.faults, raw_request.method, await raw_request.read(), self.drop_watches
                )
                return _reply(code, body)
            if self.access is not None:  # before anything else, as kube-apiserver's filters run
                user = self.access.authenticate(raw_request.headers)
                self.access.authorize(user, raw_request.method, raw_request.path, raw_request.query)
                raw_request[_USER_KEY] = user
            request = await _parse_request(raw_request, len(self._requests))
            self._requests.append(request)
            rule = self.faults.take(raw_request.method, raw_request.path)
            if rule is not None:
                return _reply(rule.status, injected.refusal(rule.status, raw_request.method, raw_request.path))
            if self.access is None:
                return await self._handle(request)
            with self.access.serving(raw_request[_USER_KEY]):  # the admission plugins judge its writes as its user's
                return await self._handle(request)
        except errors.ApiError as exc:
            return _reply(exc.code, exc.status())
        except rendering.StreamingError as exc:
            log.error("kube emulator failed while streaming a response", exc_info=exc.__cause__)
            return exc.args[0]  # type: ignore[no-any-return]
        except Exception as exc:
            return await self._render_error(exc)

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        excess = len(self._requests) - self.request_log_limit
        if excess > 0:
            del self._requests[:excess]
        if self._payloads:
            try:
                return await kmock.RawHandler._handle(self, request)
            except NotImplementedError:
                pass  # no reaction matched: the emulator serves it
        try:
            return await self._serve(request)
        except errors.ApiError as exc:
            return _reply(exc.code, exc.status())

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, kmock.KubernetesError):
            return await super()._render_error(exc)
        log.error("kube emulator failed to serve a request", exc_info=exc)
        return _reply(
            500,
            errors.ApiError(
                500, "InternalError", f"an error on the server ({exc!r}) has prevented the request from succeeding"
            ).status(),
        )

    async def _serve(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        target = routing.parse(request.url.path)
        method = request.method.value.upper()
        if target.resource is None:
            return self._serve_non_resource(target, method)
        params = dict(request.params)
        if target.resource in REVIEWS:
            return self._serve_review(target, method, request)
        if method == "GET" and params.get("watch") in ("true", "1"):
            assert request._raw_request is not None
            render = None
            if tables.wants_table(request.headers.get("Accept", "")):
                res, include = target.resource, params.get("includeObject", "Metadata")
                render = lambda obj: tables.table(res, [obj], self.store.now(), {}, include)  # noqa: E731
            return await watch.serve(self.store, target, params, request._raw_request, render)
        code, body = self._serve_resource(target, method, params, request)
        if method == "GET" and target.subresource is None and tables.wants_table(request.headers.get("Accept", "")):
            body = self._as_table(target, body, params)
        return _reply(code, body)

    def _serve_review(self, target: Target, method: str, request: rendering.Request) -> aiohttp.web.StreamResponse:
        """A SelfSubjectAccessReview or SelfSubjectRulesReview: created only, answered, never stored."""
        assert target.resource is not None and request._raw_request is not None
        if method != "POST" or target.name is not None:
            raise errors.method_not_allowed(method, target.path)
        user = request._raw_request.get(_USER_KEY, UNAUTHENTICATED_ADMIN)
        access = self.access or Access(self.store, {})
        if request.headers.get("Content-Type", "").startswith(protobuf.CONTENT_TYPE):  # kubectl auth can-i
            try:
                body = protobuf.decode_review(request.body, target.resource.kind)
            except ValueError as exc:
                raise errors.bad_request(f"the {target.resource.kind} cannot be read: {exc}") from exc
        else:
            body = _body(request)
        return _reply(201, access.review(user, target.resource, body))

    def _as_table(self, target: Target, body: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
        assert target.resource is not None
        items = body["items"] if target.name is None else [body]
        meta = body["metadata"] if target.name is None else {"resourceVersion": str(self.store.resource_version)}
        return tables.table(target.resource, items, self.store.now(), meta, params.get("includeObject", "Metadata"))

    def _serve_non_resource(self, target: Target, method: str) -> aiohttp.web.StreamResponse:
        path = target.path.rstrip("/") or "/"
        if method != "GET":
            raise errors.method_not_allowed(method, path)
        if path in ("/healthz", "/livez", "/readyz"):
            return aiohttp.web.Response(text="ok")
        body: dict[str, Any] | None = None
        if path == "/":
            body = discovery.root_paths()
        elif path == "/version":
            body = discovery.VERSION_INFO
        elif path == "/api":
            body = discovery.api_versions()
        elif path == "/apis":
            body = discovery.api_group_list()
        elif target.group is not None and target.version is not None:
            body = discovery.api_resource_list(target.group, target.version)
        elif target.group:
            body = discovery.api_group(target.group)
        if body is None:
            raise errors.endpoint_not_found(path)
        return _reply(200, body)

    def _serve_resource(
        self, target: Target, method: str, params: dict[str, str], request: rendering.Request
    ) -> tuple[int, Any]:
        if params.get("dryRun"):
            raise errors.bad_request("dryRun is not supported by the nodeflow Kubernetes emulator")
        body = _body(request)
        content_type = request.headers.get("Content-Type", "application/json")
        store, sub = self.store, target.subresource
        if target.name is None:
            return self._serve_collection(target, method, params, body)
        if sub == "eviction" and method == "POST":
            return 201, evict(store, target.namespace or "", target.name, body)
        elif sub == "binding" and method == "POST":
            return 201, subresources.bind(store, target.namespace or "", target.name, body)
        elif sub == "scale":
            return self._serve_scale(target, method, content_type, body)
        elif method == "GET":
            return verbs.get(store, target)
        elif method == "PUT":
            return verbs.update(store, target, body)
        elif method == "PATCH":
            return verbs.patch(store, target, content_type, body)
        elif method == "DELETE" and sub is None:
            return verbs.delete(store, target, params, body)
        raise errors.method_not_allowed(method, target.path)

    def _serve_collection(self, target: Target, method: str, params: dict[str, str], body: Any) -> tuple[int, Any]:
        if method == "GET":
            return verbs.list_objects(self.store, target, params)
        if method == "POST":
            return verbs.create(self.store, target, body)
        if method == "DELETE":
            return verbs.delete_collection(self.store, target, params)
        raise errors.method_not_allowed(method, target.path)

    def _serve_scale(self, target: Target, method: str, content_type: str, body: Any) -> tuple[int, Any]:
        if method == "GET":
            return 200, subresources.get_scale(self.store, target)
        if method == "PUT":
            return 200, subresources.write_scale(self.store, target, None, body)
        if method == "PATCH":
            return 200, subresources.write_scale(self.store, target, content_type, body)
        raise errors.method_not_allowed(method, target.path)


async def _parse_request(raw_request: aiohttp.web.BaseRequest, request_id: int) -> rendering.Request:
    """A kmock Request (for the DSL and the request log) with the Kubernetes parts filled in."""
    body = await raw_request.read()
    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    try:
        target: Target | None = routing.parse(raw_request.path)
    except errors.ApiError:
        target = None
    resource = namespace = name = subresource = action = None
    if target is not None and target.resource is not None:
        res = target.resource
        resource = kmock.resource(group=res.group, version=res.version, plural=res.plural)
        namespace, name, subresource = target.namespace, target.name, target.subresource
        parsed = parsing.ParsedPath(res.group, res.version, res.plural, namespace, name, subresource)
        action = parsing.guess_k8s(parsed, enums.method(raw_request.method), dict(raw_request.query))
    return rendering.Request(
        id=request_id,
        raw_request=raw_request,
        url=raw_request.url,
        method=raw_request.method,
        params=dict(raw_request.query),
        headers=dict(raw_request.headers),
        cookies=dict(raw_request.cookies),
        data=data,
        body=body,
        text=body.decode("utf-8", "replace"),
        action=action,
        resource=resource,
        namespace=namespace,
        name=name,
        subresource=subresource,
    )


def _body(request: rendering.Request) -> Any:
    if request.data is not None or not request.body:
        return request.data
    raise errors.bad_request("the request body is not valid JSON (the emulator accepts JSON only)")
