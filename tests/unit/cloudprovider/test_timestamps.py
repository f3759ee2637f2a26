"""The clients' timestamp parser returns what botocore's would, for every form AWS sends."""

from __future__ import annotations

import datetime as dt

import pytest
from botocore.utils import parse_timestamp as botocore_parse_timestamp

from cloudprovider.aws.timestamps import parse_timestamp


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-24T18:00:00.000Z",
        "2026-11-24T18:00:00Z",
        "2026-11-24T18:00:00+02:00",
        "2026-11-24T18:00:00",  # no zone: botocore reads it as local time
        "Tue, 24 Nov 2026 18:00:00 GMT",
        "1795629600",
        1795629600,
        1795629600.5,
    ],
)
def test_the_parsed_instant_is_botocores(value: object) -> None:
    parsed, expected = parse_timestamp(value), botocore_parse_timestamp(value)
    assert (parsed.tzinfo is None, parsed) == (expected.tzinfo is None, expected)


def test_an_iso_timestamp_with_a_zone_is_utc_aware() -> None:
    assert parse_timestamp("2026-11-24T18:00:00.000Z") == dt.datetime(2026, 11, 24, 18, tzinfo=dt.UTC)


def test_garbage_fails_as_botocore_fails() -> None:
    with pytest.raises(ValueError):
        parse_timestamp("not-a-time")
