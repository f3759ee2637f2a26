"""workers.temporal.search_attribute_check without a server: what is lacking, the commands, and a refused or slow
list (Temporal Cloud may refuse ListSearchAttributes to an API key) is a warning, not an exit."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

from workers.settings import Settings
from workers.temporal.search_attribute_check import Lacking, check_search_attributes, create_commands, lacking
from workflows import search_attributes as sa

KEYWORD, TEXT = 2, 1  # temporal.api.enums.v1.IndexedValueType


def test_lacking_names_the_missing_and_the_mistyped_in_order() -> None:
    existing = {"Zone": KEYWORD, "NodePool": TEXT, "Other": KEYWORD}
    assert lacking(existing)[:2] == [Lacking("NodePool", "Keyword", "Text"), Lacking("InstanceType", "Keyword")]
    assert [item.name for item in lacking(existing)] == [
        "NodePool",
        "InstanceType",
        "CapacityType",
        "NodeName",
        "Phase",
    ]
    assert lacking({key.name: KEYWORD for key in sa.ALL}) == []


def test_the_commands_pair_every_name_with_its_type() -> None:
    settings = Settings(temporal_address="tmprl:7233", temporal_namespace="prod.a1b2c")
    self_hosted, cloud = create_commands(settings, [Lacking("NodePool", "Keyword"), Lacking("Size", "Int")])
    assert self_hosted == (
        "temporal operator search-attribute create --address tmprl:7233 --namespace prod.a1b2c "
        "--name NodePool --type Keyword --name Size --type Int"
    )
    assert cloud == (
        'tcld namespace search-attributes add --namespace prod.a1b2c --search-attribute "NodePool=Keyword" '
        '--search-attribute "Size=Int"'
    )


def client_raising(error: BaseException) -> Any:
    async def list_search_attributes(*_: object, **__: object) -> None:
        raise error

    return SimpleNamespace(operator_service=SimpleNamespace(list_search_attributes=list_search_attributes))


def client_never_answering() -> Any:
    async def list_search_attributes(*_: object, **__: object) -> None:
        await asyncio.Event().wait()

    return SimpleNamespace(operator_service=SimpleNamespace(list_search_attributes=list_search_attributes))


@pytest.mark.parametrize(
    "client",
    [
        client_raising(RPCError("Request unauthorized.", RPCStatusCode.PERMISSION_DENIED, b"")),
        client_raising(RPCError("not implemented", RPCStatusCode.UNIMPLEMENTED, b"")),
        client_never_answering(),
    ],
    ids=["permission-denied", "unimplemented", "no-answer"],
)
async def test_a_list_the_server_will_not_give_is_a_warning_with_the_commands(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(temporal_namespace="prod.a1b2c")
    with caplog.at_level(logging.WARNING, logger="workers.temporal.search_attribute_check"):
        await check_search_attributes(client, settings, timeout=0.05)
    [record] = caplog.records
    assert "starting anyway" in record.getMessage()
    assert 'tcld namespace search-attributes add --namespace prod.a1b2c --search-attribute "NodePool=Keyword"' in (
        record.getMessage()
    )
