"""Custom search attributes of NodeClaim workflows (Keyword). The dev stack registers them at start-up;
on a self-hosted cluster or Temporal Cloud, create them once with
`temporal operator search-attribute create --name NodePool --type Keyword` (and the rest)."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

NODE_POOL = SearchAttributeKey.for_keyword("NodePool")
INSTANCE_TYPE = SearchAttributeKey.for_keyword("InstanceType")
ZONE = SearchAttributeKey.for_keyword("Zone")
CAPACITY_TYPE = SearchAttributeKey.for_keyword("CapacityType")
NODE_NAME = SearchAttributeKey.for_keyword("NodeName")
PHASE = SearchAttributeKey.for_keyword("Phase")

ALL = (NODE_POOL, INSTANCE_TYPE, ZONE, CAPACITY_TYPE, NODE_NAME, PHASE)
