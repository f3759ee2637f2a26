"""Custom search attributes of NodeClaim workflows (Keyword). A NodeClaim workflow sets them when it
starts, and Temporal refuses to start one whose namespace lacks them, so they must exist, once per
namespace, before the worker starts; the worker checks at start and exits naming the missing ones
(workers.temporal.search_attribute_check). The dev stack registers them at start-up. Otherwise create them:

- self-hosted Temporal (the temporal CLI pairs each `--name` with the `--type` after it):
  `temporal operator search-attribute create --namespace NS --name NodePool --type Keyword
  --name InstanceType --type Keyword --name Zone --type Keyword --name CapacityType --type Keyword
  --name NodeName --type Keyword --name Phase --type Keyword`
- Temporal Cloud (which refuses the operator call; tcld, the Cloud UI or Terraform):
  `tcld namespace search-attributes add --namespace NS --search-attribute "NodePool=Keyword"
  --search-attribute "InstanceType=Keyword" --search-attribute "Zone=Keyword"
  --search-attribute "CapacityType=Keyword" --search-attribute "NodeName=Keyword"
  --search-attribute "Phase=Keyword"`
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

NODE_POOL = SearchAttributeKey.for_keyword("NodePool")
INSTANCE_TYPE = SearchAttributeKey.for_keyword("InstanceType")
ZONE = SearchAttributeKey.for_keyword("Zone")
CAPACITY_TYPE = SearchAttributeKey.for_keyword("CapacityType")
NODE_NAME = SearchAttributeKey.for_keyword("NodeName")
PHASE = SearchAttributeKey.for_keyword("Phase")

ALL = (NODE_POOL, INSTANCE_TYPE, ZONE, CAPACITY_TYPE, NODE_NAME, PHASE)
