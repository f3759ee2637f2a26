"""The timestamp parser nodeflow's boto3 clients use.

botocore parses every timestamp of a response with dateutil's general-purpose parser, about 50 µs a value;
DescribeSpotPriceHistory answers with a timestamp per (instance type, zone, product), thousands for a
region, so a worker start spent a quarter of a second of CPU on them. EC2's query API sends ISO 8601 with
a zone (`2026-11-24T18:00:00.000Z`), which the standard library parses in about a microsecond; anything
else goes to botocore's own parser, so what a client returns does not change."""

from __future__ import annotations

import datetime as dt
from typing import Any

from botocore.utils import parse_timestamp as botocore_parse_timestamp


def parse_timestamp(value: Any) -> dt.datetime:
    """`value` as an aware datetime: ISO 8601 with a zone directly, any other form (epoch seconds, RFC 822,
    ISO 8601 without a zone, which botocore reads as local time) as botocore parses it."""
    if isinstance(value, str) and "-" in value:
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed
    result: dt.datetime = botocore_parse_timestamp(value)
    return result
