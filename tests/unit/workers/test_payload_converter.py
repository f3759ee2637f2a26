"""workers.temporal.payload_converter: one pydantic payload converter per process, with pydantic's wire format."""

from __future__ import annotations

from temporalio.contrib.pydantic import pydantic_data_converter

from workers.temporal.payload_converter import SharedPydanticPayloadConverter, shared_pydantic_data_converter
from workflows.nodeclaim_state import NodeClaimInput, NodeClaimState, input_json


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


def test_a_continued_input_without_its_defaults_decodes_to_the_same_input() -> None:
    """The NodeClaim workflow continues as new with its input as JSON without default fields
    (workflows.nodeclaim_phases.claim): the next run must read back exactly the input it would have had."""
    from datetime import UTC, datetime

    state = NodeClaimState(
        name="c",
        phase="Running",
        node_pool="default",
        instance_id="i-0123",
        node_name="ip-10-0-0-1.ec2.internal",
        launched_at=datetime(2026, 11, 24, 20, 59, 8, 593490, tzinfo=UTC),
        conditions={"Launched": "True", "Initialized": "True"},
    )
    value = NodeClaimInput(name="c", claim_uid="u-1", node_pool="default", state=state, drift_check_requested=True)
    compact = input_json(value)
    converter = shared_pydantic_data_converter.payload_converter
    (back,) = converter.from_payloads(converter.to_payloads([compact]), [NodeClaimInput])
    assert back == value
    assert len(converter.to_payloads([compact])[0].data) < len(converter.to_payloads([value])[0].data) / 2
