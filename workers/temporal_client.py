"""Connecting to Temporal (dev server, self-hosted cluster or Temporal Cloud) with nodeflow's converter."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from workers.settings import Settings


async def connect(settings: Settings) -> Client:
    """A client for the configured address and namespace, converting payloads with pydantic."""
    return await Client.connect(
        settings.temporal_address, namespace=settings.temporal_namespace, data_converter=pydantic_data_converter
    )
