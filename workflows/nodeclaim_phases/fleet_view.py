"""The NodeClaim workflow's fleet view: the search attributes and memo that follow its state (what the
Temporal UI lists), upserted only when they changed and carried across continue-as-new. Deterministic."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from workflows import search_attributes as sa
from workflows.nodeclaim_state import NodeClaimState


def published_values(state: NodeClaimState) -> dict[str, str]:
    """The search attributes that follow `state` (the empty ones but Phase left out) and the memo's
    `summary`, in the shape of `published`."""
    values = {
        sa.PHASE.name: state.phase,
        sa.NODE_POOL.name: state.node_pool,
        sa.INSTANCE_TYPE.name: state.instance_type,
        sa.ZONE.name: state.zone,
        sa.CAPACITY_TYPE.name: state.capacity_type,
        sa.NODE_NAME.name: state.node_name,
    }
    kept = {name: value for name, value in values.items() if value or name == sa.PHASE.name}
    return {**kept, "summary": state.summary()}


def published() -> dict[str, str]:
    """What this run's search attributes and memo say now: what it started with (what the starter set,
    Phase and NodePool and the summary, or what continue-as-new carried over) and what it has upserted
    since, which the SDK keeps in workflow.info(). Read each time rather than kept: a copy would be one
    more object per cached run."""
    info = workflow.info()
    values = {key.name: value for key in sa.ALL if (value := info.typed_search_attributes.get(key))}
    summary = workflow.memo_value("summary", default=None, type_hint=str)
    if summary is not None:
        values["summary"] = summary
    return values


def continued_view(state: NodeClaimState) -> dict[str, Any]:
    """continue_as_new's `search_attributes` and `memo`: the fleet view of `state` as it is now, carried
    to the next run without an upsert."""
    values = published_values(state)
    summary = values.pop("summary")
    keys = {key.name: key for key in sa.ALL}
    pairs = [SearchAttributePair(keys[name], value) for name, value in values.items()]
    return {"search_attributes": TypedSearchAttributes(pairs), "memo": {"summary": summary}}


def publish(state: NodeClaimState) -> None:
    """Search attributes and memo follow `state` (the Temporal UI's fleet view). Only what changed since
    the last upsert of this run (or what continue-as-new carried over) is sent."""
    current = published_values(state)
    summary = current.pop("summary")
    keys = {key.name: key for key in sa.ALL}
    before = published()
    changed = [name for name, value in current.items() if before.get(name) != value]
    if changed:
        workflow.upsert_search_attributes([keys[name].value_set(current[name]) for name in changed])
    if before.get("summary") != summary:
        workflow.upsert_memo({"summary": summary})
