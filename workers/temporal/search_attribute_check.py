"""The worker's start-up check that its Temporal namespace has nodeflow's custom search attributes
(workflows.search_attributes.ALL), each with its type.

A NodeClaim workflow sets them when it starts, and Temporal refuses to start a workflow with a search
attribute its namespace does not define (INVALID_ARGUMENT "search attribute ... is not defined"), so
without this check the first provisioning round would fail instead of the worker's start. Custom search
attributes belong to one namespace (a self-hosted cluster with SQL visibility, Temporal Cloud), so each
namespace a worker serves needs them.

`check_search_attributes` lists the namespace's custom search attributes (OperatorService
ListSearchAttributes, after workers.temporal.client.connect found the namespace) and raises
TemporalSettingError with one message naming the missing ones, and the ones of another type, and the
commands that create them: `temporal operator search-attribute create` (self-hosted; `--name N --type T`
per attribute) and `tcld namespace search-attributes add` (Temporal Cloud; `--search-attribute "N=T"`
per attribute). Where the server will not list them (Temporal Cloud may
answer PermissionDenied to an API key; the time-skipping test server does not implement the call), or
does not answer in time, or fails otherwise, it logs a warning with the same commands and returns: it
cannot tell, and a namespace it cannot read is no reason to keep the worker down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeIndexedValueType as IndexedType
from temporalio.service import RPCError

from workers.settings import Settings, where
from workers.temporal.errors import TemporalSettingError
from workflows import search_attributes as sa

log = logging.getLogger(__name__)

LIST_TIMEOUT_SECONDS = 3.0  # after connect's 5 s at most: a worker without them exits within 10 s

# The type names the temporal CLI and tcld take (`--type Keyword`, "Name=Keyword").
TYPE_NAMES = {
    IndexedType.TEXT: "Text",
    IndexedType.KEYWORD: "Keyword",
    IndexedType.INT: "Int",
    IndexedType.DOUBLE: "Double",
    IndexedType.BOOL: "Bool",
    IndexedType.DATETIME: "Datetime",
    IndexedType.KEYWORD_LIST: "KeywordList",
}


@dataclass(frozen=True)
class Lacking:
    """A search attribute nodeflow needs that the namespace lacks (`found` None) or has as another type."""

    name: str
    wanted: str
    found: str | None = None


def lacking(existing: Mapping[str, int], wanted: Sequence[Any] = sa.ALL) -> list[Lacking]:
    """The attributes of `wanted` (SearchAttributeKeys) that `existing` (name -> indexed value type, as
    ListSearchAttributes answers) lacks or has as another type, in `wanted`'s order."""
    out: list[Lacking] = []
    for key in wanted:
        need = TYPE_NAMES[key.indexed_value_type]
        if key.name not in existing:
            out.append(Lacking(key.name, need))
        elif existing[key.name] != int(key.indexed_value_type):
            found = TYPE_NAMES.get(IndexedType(existing[key.name]), str(existing[key.name]))
            out.append(Lacking(key.name, need, found))
    return out


def create_commands(settings: Settings, missing: Sequence[Lacking]) -> tuple[str, str]:
    """The commands that create `missing` in the settings' namespace: the temporal CLI's (against the
    settings' address) for a self-hosted cluster, and tcld's for Temporal Cloud. The temporal CLI pairs
    each `--name` with the `--type` after it (given once, `--type` covers only the first name), so every
    name gets its own."""
    namespace = settings.temporal_namespace
    self_hosted = (
        f"temporal operator search-attribute create --address {settings.temporal_address} --namespace {namespace} "
        + " ".join(f"--name {item.name} --type {item.wanted}" for item in missing)
    )
    cloud = f"tcld namespace search-attributes add --namespace {namespace} " + " ".join(
        f'--search-attribute "{item.name}={item.wanted}"' for item in missing
    )
    return self_hosted, cloud


def lacking_message(settings: Settings, missing: Sequence[Lacking]) -> str:
    """The one message of a namespace lacking search attributes: the list, the commands that create
    them, and how to free a name taken by another type."""
    namespace = settings.temporal_namespace
    absent = [item.name for item in missing if item.found is None]
    mistyped = [item for item in missing if item.found is not None]
    parts = []
    if absent:
        parts.append(f"lacks {', '.join(absent)}")
    if mistyped:
        parts.append("has " + ", ".join(f"{i.name} as {i.found} (not {i.wanted})" for i in mistyped))
    self_hosted, cloud = create_commands(settings, missing)
    lines = [
        f"{where('temporal_namespace')}: namespace {namespace!r} at {settings.temporal_address} "
        f"{' and '.join(parts)}: nodeflow's NodeClaim workflows set these custom search attributes "
        f"({', '.join(f'{i.name}={i.wanted}' for i in missing)}). Create them once in the namespace, then start "
        "the worker again:",
        f"  self-hosted Temporal: {self_hosted}",
        f"  Temporal Cloud:       {cloud}",
    ]
    for item in mistyped:
        lines.append(
            f"  first free the name {item.name} ({item.found}): temporal operator search-attribute remove "
            f"--address {settings.temporal_address} --namespace {namespace} --name {item.name}; on Temporal Cloud, "
            f"which cannot remove one, tcld namespace search-attributes rename --namespace {namespace} "
            f"--existing-name {item.name} --new-name {item.name}{item.found}"
        )
    return "\n".join(lines)


async def check_search_attributes(
    client: Client, settings: Settings, timeout: float = LIST_TIMEOUT_SECONDS, wanted: Sequence[Any] = sa.ALL
) -> None:
    """Raise TemporalSettingError (lacking_message) when the namespace lacks any of `wanted` or has one as
    another type; log a warning and return when the server does not list them (see the module
    docstring)."""
    namespace = settings.temporal_namespace
    request = ListSearchAttributesRequest(namespace=namespace)
    try:
        call = client.operator_service.list_search_attributes(request, timeout=timedelta(seconds=timeout))
        response = await asyncio.wait_for(call, timeout + 1)  # the RPC deadline, and a guard should it not fire
    except (TimeoutError, RPCError) as err:
        why = f"{err.status.name}: {err.message}" if isinstance(err, RPCError) else f"no answer in {timeout:g}s"
        self_hosted, cloud = create_commands(
            settings, [Lacking(k.name, TYPE_NAMES[k.indexed_value_type]) for k in wanted]
        )
        log.warning(
            "cannot list the search attributes of namespace %r (%s); starting anyway. NodeClaim workflows need %s: "
            "if they are missing, create them (Temporal Cloud: %s; self-hosted: %s)",
            namespace, why, ", ".join(k.name for k in wanted), cloud, self_hosted,
        )  # fmt: skip
        return
    missing = lacking(dict(response.custom_attributes), wanted)
    if missing:
        raise TemporalSettingError(lacking_message(settings, missing))
    log.info("namespace %r has nodeflow's search attributes (%s)", namespace, ", ".join(k.name for k in wanted))
