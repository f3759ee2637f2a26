"""Connecting to Temporal (dev server, self-hosted cluster or Temporal Cloud) with nodeflow's converter:
the one place that builds the client, for the worker and every command that talks to Temporal.

`connect` checks before returning: the TLS files (workers.temporal.tls), that the server answers (TLS
handshake included) and that the namespace exists, each within CONNECT_TIMEOUT_SECONDS. Any failure is a
TemporalSettingError with one line naming the setting and the cause; callers print it and exit non-zero.
The API key never appears in a message. The worker then checks that the namespace has nodeflow's search
attributes (workers.temporal.search_attribute_check) before anything else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client, Interceptor
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode

from workers.settings import Settings, where
from workers.temporal.errors import TemporalSettingError, describe_connect_failure
from workers.temporal.payload_converter import shared_pydantic_data_converter
from workers.temporal.tls import tls_config
from workflows import search_attributes as sa

CONNECT_TIMEOUT_SECONDS = 5.0  # connect, handshake and namespace check; a process fails within 10 s

__all__ = ["CONNECT_TIMEOUT_SECONDS", "TemporalSettingError", "connect", "register_search_attributes"]


async def connect(
    settings: Settings,
    timeout: float = CONNECT_TIMEOUT_SECONDS,
    runtime: Runtime | None = None,
    interceptors: Sequence[Interceptor] = (),
) -> Client:
    """A client for the configured address, namespace, TLS and API key, converting payloads with pydantic,
    once the server answered and the namespace exists, on `runtime` (the worker's exports the SDK's
    metrics, workers.metrics_server; None: the SDK's default), with `interceptors` (the worker's tracing,
    workers.tracing; they apply to workers built on the client too). Raises TemporalSettingError (one
    line) otherwise, within about `timeout` seconds."""
    deadline = time.monotonic() + timeout
    tls = tls_config(settings)
    try:
        client = await asyncio.wait_for(
            Client.connect(
                settings.temporal_address,
                namespace=settings.temporal_namespace,
                data_converter=shared_pydantic_data_converter,
                tls=tls,
                api_key=settings.temporal_api_key or None,
                runtime=runtime,
                interceptors=interceptors,
            ),
            timeout,
        )
    except TimeoutError:
        raise TemporalSettingError(
            f"{where('temporal_address')}: Temporal at {settings.temporal_address} did not answer within "
            f"{timeout:g}s (check the address, a firewall, and whether the server expects TLS)"
        ) from None
    except (RuntimeError, RPCError) as err:
        raise TemporalSettingError(_scrub(settings, describe_connect_failure(settings, str(err)))) from None
    await _check_namespace(client, settings, max(deadline - time.monotonic(), 1.0))
    return client


async def _check_namespace(client: Client, settings: Settings, timeout: float) -> None:
    """DescribeNamespace: a missing namespace or one the credentials may not use fails here, at start,
    rather than at the first workflow call."""
    namespace = settings.temporal_namespace
    request = DescribeNamespaceRequest(namespace=namespace)
    try:
        call = client.workflow_service.describe_namespace(request, timeout=timedelta(seconds=timeout))
        await asyncio.wait_for(call, timeout + 1)  # the RPC deadline, and a guard should it not fire
    except TimeoutError:
        why = f"Temporal at {settings.temporal_address} did not describe namespace {namespace!r} in {timeout:.0f}s"
        raise TemporalSettingError(f"{where('temporal_namespace')}: {why}") from None
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            why = f"no namespace {namespace!r} at {settings.temporal_address}"
            raise TemporalSettingError(f"{where('temporal_namespace')}: {why}") from None
        if err.status in (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNAUTHENTICATED):
            setting = "temporal_api_key" if settings.temporal_api_key else "temporal_tls_cert_file"
            why = f"not allowed to use namespace {namespace!r} at {settings.temporal_address}: {err.message}"
            raise TemporalSettingError(_scrub(settings, f"{where(setting)}: {why}")) from None
        if err.status == RPCStatusCode.DEADLINE_EXCEEDED:
            why = f"Temporal at {settings.temporal_address} did not describe namespace {namespace!r} in {timeout:.0f}s"
            raise TemporalSettingError(f"{where('temporal_namespace')}: {why}") from None
        why = f"describing namespace {namespace!r} at {settings.temporal_address} failed: {err.message}"
        raise TemporalSettingError(_scrub(settings, f"{where('temporal_namespace')}: {why}")) from None


def _scrub(settings: Settings, message: str) -> str:
    """The message without the API key, should a server ever echo it."""
    key = settings.temporal_api_key
    return message.replace(key, "<temporal_api_key>") if key else message


async def register_search_attributes(client: Client, namespace: str = "default") -> None:
    """Create nodeflow's custom search attributes (Keyword) in the namespace; existing ones are kept.
    Self-hosted clusters and test servers accept this; Temporal Cloud refuses it: there, create them with
    tcld or the Cloud UI (workflows.search_attributes gives the command)."""
    try:
        existing = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
        known = set(existing.custom_attributes)
    except RPCError as err:
        if err.status != RPCStatusCode.UNIMPLEMENTED:  # the time-skipping test server cannot list
            raise
        known = set()
    missing = {key.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for key in sa.ALL if key.name not in known}
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
        )
