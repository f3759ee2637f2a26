"""``?watch=true`` streams: JSON lines of ``{"type", "object"}`` events.

Semantics (as kube-apiserver): without resourceVersion (or with "0") the stream starts with a
synthetic ADDED for every selected object; with a resourceVersion it replays only newer events,
or sends an ERROR event with a 410 Expired Status when that version was compacted away.
Selectors are applied to every event, and an object that stops (starts) matching a selector is
sent as DELETED (ADDED). The server ends the stream after ``timeoutSeconds`` (default 1800).
With ``allowWatchBookmarks=true`` a stream that ends by timeout closes with a BOOKMARK carrying
the current resourceVersion, so the client resumes from there without a replay.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp.web

from devstack.kube import errors, verbs
from devstack.kube.routing import Target
from devstack.kube.selectors import Predicate
from devstack.kube.store import ObjectStore, WatchEvent

DEFAULT_TIMEOUT_SECONDS = 1800
_LIVENESS_CHECK_SECONDS = 5.0


def _since(params: Mapping[str, str]) -> int | None:
    raw = params.get("resourceVersion") or ""
    if raw in ("", "0"):
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(
            f"resourceVersion: {raw!r} is not a resource version returned by this server"
        ) from None


def _timeout(params: Mapping[str, str]) -> float:
    raw = params.get("timeoutSeconds") or ""
    try:
        return float(raw) if raw else float(DEFAULT_TIMEOUT_SECONDS)
    except ValueError:
        raise errors.bad_request(f"timeoutSeconds: {raw!r} is not a number of seconds") from None


class _Filter:
    """Decides how (and whether) one event is shown to one watch."""

    def __init__(self, target: Target, predicate: Predicate | None) -> None:
        self._namespace = target.namespace
        self._name = target.name
        self._predicate = predicate

    def matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj["metadata"]
        if self._namespace is not None and meta.get("namespace") != self._namespace:
            return False
        if self._name is not None and meta["name"] != self._name:
            return False
        return self._predicate is None or self._predicate(obj)

    def shown_as(self, event: WatchEvent) -> str | None:
        if event.type == "ADDED":
            return "ADDED" if self.matches(event.obj) else None
        if event.type == "DELETED":
            return "DELETED" if self.matches(event.old or event.obj) else None
        now, before = self.matches(event.obj), self.matches(event.old)
        if now:
            return "MODIFIED" if before else "ADDED"
        return "DELETED" if before else None


Render = Callable[[dict[str, Any]], dict[str, Any]]


def _encode(events: list[WatchEvent], view: _Filter, render: Render | None) -> bytes:
    chunks = []
    for event in events:
        shown = view.shown_as(event)
        if shown is None:
            continue
        if render is None:
            chunks.append(event.encode(shown))
        else:
            chunks.append(json.dumps({"type": shown, "object": render(event.obj)}).encode() + b"\n")
    return b"".join(chunks)


def _bookmark(target: Target, resource_version: int) -> bytes:
    res = verbs.resource_of(target)
    obj = {"kind": res.kind, "apiVersion": res.api_version, "metadata": {"resourceVersion": str(resource_version)}}
    return json.dumps({"type": "BOOKMARK", "object": obj}).encode() + b"\n"


async def serve(
    store: ObjectStore,
    target: Target,
    params: Mapping[str, str],
    raw_request: aiohttp.web.BaseRequest,
    render: Render | None = None,
) -> aiohttp.web.StreamResponse:
    """Run one watch stream until timeout, a dropped subscription, or the client going away.

    ``render`` replaces each event's object (kubectl asks for one-row Tables).
    """
    view = _Filter(target, verbs.list_predicate(params))
    timeout = _timeout(params)
    response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    try:
        backlog, sub = store.subscribe(verbs.resource_of(target), _since(params))
    except errors.ApiError as exc:
        if exc.code != 410:
            raise
        await response.prepare(raw_request)
        await response.write(json.dumps({"type": "ERROR", "object": exc.status()}).encode() + b"\n")
        await response.write_eof()
        return response
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        await response.prepare(raw_request)
        await response.write(_encode(backlog, view, render))
        while (remaining := deadline - loop.time()) > 0:
            try:
                first = await asyncio.wait_for(sub.queue.get(), min(remaining, _LIVENESS_CHECK_SECONDS))
            except TimeoutError:
                transport = raw_request.transport
                if transport is None or transport.is_closing():
                    break
                continue
            batch = [first]
            while not sub.queue.empty():
                batch.append(sub.queue.get_nowait())
            if None in batch:
                await response.write(_encode([e for e in batch[: batch.index(None)] if e is not None], view, render))
                break
            await response.write(_encode([e for e in batch if e is not None], view, render))
        else:
            if params.get("allowWatchBookmarks") == "true" and sub.queue.empty():
                await response.write(_bookmark(target, store.resource_version))
        await response.write_eof()
    except ConnectionError:
        pass  # the client went away; nothing to tell it
    finally:
        store.unsubscribe(sub)
    return response
