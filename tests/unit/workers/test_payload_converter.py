"""workers.payload_converter: one pydantic payload converter per process, with pydantic's wire format."""

from __future__ import annotations

from temporalio.contrib.pydantic import pydantic_data_converter

from workers.payload_converter import SharedPydanticPayloadConverter, shared_pydantic_data_converter
from workflows.nodeclaim_state import NodeClaimInput, NodeClaimState


def test_every_construction_returns_the_one_instance() -> None:
    assert SharedPydanticPayloadConverter() is SharedPydanticPayloadConverter()
    first = shared_pydantic_data_converter._new_payload_converter()
    second = shared_pydantic_data_converter._new_payload_converter()
    assert first.to_payloads(["x"]) == second.to_payloads(["x"])


def test_payloads_are_pydantics() -> None:
    value = NodeClaimInput(name="c", state=NodeClaimState(name="c", phase="Running"))
    ours = shared_pydantic_data_converter.payload_converter
    theirs = pydantic_data_converter.payload_converter
    assert ours.to_payloads([value]) == theirs.to_payloads([value])
    (back,) = ours.from_payloads(theirs.to_payloads([value]), [NodeClaimInput])
    assert back == value
