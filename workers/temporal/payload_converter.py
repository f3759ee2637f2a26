"""The worker's data converter: pydantic, with one payload converter for the whole process.

The SDK builds a payload converter for every workflow it caches (`payload_converter_class()` per
workflow instance), and each pydantic payload converter keeps its own cache of TypeAdapters: a schema
validator and serializer for every type the workflow's input, results and activity results use. That was
about 25 KiB of a cached NodeClaim workflow's memory, repeated for every node. The converters hold no
other state (none of them takes a serialization context, so the SDK never derives one per workflow), so
every workflow shares one instance and one TypeAdapter cache; the cache and TypeAdapters are
thread-safe. The wire format is pydantic's JSON, the same as `temporalio.contrib.pydantic`'s."""

from __future__ import annotations

import threading
from typing import ClassVar

from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DataConverter


class SharedPydanticPayloadConverter(PydanticPayloadConverter):
    """A PydanticPayloadConverter of which the process has one instance: constructing it again returns
    that instance (the SDK needs a nullary class, see the module docstring)."""

    _instance: ClassVar[SharedPydanticPayloadConverter | None] = None
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __new__(cls) -> SharedPydanticPayloadConverter:
        with cls._lock:
            if cls._instance is None:
                instance = super().__new__(cls)
                PydanticPayloadConverter.__init__(instance)
                cls._instance = instance
            return cls._instance

    def __init__(self) -> None:
        """Initialised once, in `__new__`."""


shared_pydantic_data_converter = DataConverter(payload_converter_class=SharedPydanticPayloadConverter)

__all__ = ["SharedPydanticPayloadConverter", "shared_pydantic_data_converter"]
