"""The NodeClaim lifecycle activities' log lines name the claim, its NodePool and Node in `extra`
(activities.nodeclaim.base.claim_logger), so the JSON format (workers.log_format) writes them as fields."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from activities.nodeclaim import termination
from activities.nodeclaim.base import claim_logger
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from activities.nodeclaim.termination import TerminationActivities
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.fake import Events, MemKube
from tests.unit.activities.claimworld import NAME, NODE, as_admin_patch
from workers.log_format import JsonFormatter


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The termination activities' log records at INFO, one JSON object per line."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = termination.log
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield out
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_finalize_logs_the_node_and_claim_it_deleted_with_their_nodepool(
    kube: MemKube, cloud: FakeCloudProvider, events: Events, json_lines: io.StringIO
) -> None:
    finalizer = {"finalizers": ["karpenter.sh/termination"], "labels": {"karpenter.sh/nodepool": "default"}}
    as_admin_patch(kube, r.NODE, NODE, {"metadata": finalizer})
    TerminationActivities(kube, cloud, events, "test").finalize(ClaimIdentity(name=NAME, node_name=NODE))  # type: ignore[arg-type]
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    assert [line["message"] for line in lines] == [f"deleted node {NODE}", f"deleted NodeClaim {NAME}"]
    for line in lines:
        assert (line["nodeclaim"], line["node"], line["nodepool"]) == (NAME, NODE, "default")
        assert line["logger"] == "activities.nodeclaim.termination"


def test_the_claim_logger_leaves_out_what_is_unknown() -> None:
    adapter = claim_logger(logging.getLogger("x"), ClaimRef(name="c-1"))
    assert adapter.extra == {"nodeclaim": "c-1"}
