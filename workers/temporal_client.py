"""Connecting to Temporal (dev server, self-hosted cluster or Temporal Cloud) with nodeflow's converter."""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from workers.settings import Settings
from workflows import search_attributes as sa


async def connect(settings: Settings) -> Client:
    """A client for the configured address and namespace, converting payloads with pydantic."""
    return await Client.connect(
        settings.temporal_address, namespace=settings.temporal_namespace, data_converter=pydantic_data_converter
    )


async def register_search_attributes(client: Client, namespace: str = "default") -> None:
    """Create nodeflow's custom search attributes (Keyword) in the namespace; existing ones are kept.
    Self-hosted clusters and test servers accept this; on Temporal Cloud create them in the UI or tcld."""
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
