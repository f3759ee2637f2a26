"""The small TOML writer reads back through tomllib; the merge is key by key."""

from __future__ import annotations

import datetime as dt
import tomllib
from typing import Any

from cloudprovider.aws.launch.tomlwriter import dumps, merge


def test_round_trip_through_tomllib() -> None:
    doc = {
        "title": 'quote " backslash \\ tab \t newline \n del \x7f é',
        "n": 3,
        "f": 2.5,
        "big": 1e20,
        "yes": True,
        "when": dt.datetime(2025, 7, 15, 12, 0, tzinfo=dt.UTC),
        "list": [1, 2, 3],
        "settings": {
            "kubernetes": {"node-labels": {"a.b/c": "d"}, "max-pods": 50},
            "empty": {},
        },
        "servers": [{"name": "x"}, {"name": "y", "tags": {"t": "1"}}],
        "inline": [{"a": 1}, 2],
    }
    assert tomllib.loads(dumps(doc)) == doc


def test_each_table_is_declared_once() -> None:
    text = dumps({"settings": {"kubernetes": {"a": "1", "node-labels": {"x": "y"}}}})
    assert text.count("[settings.kubernetes]") == 1
    assert "[settings]" not in text  # no header for a table with only sub-tables


def test_merge_tables_recursively_lists_as_union_ours_wins_for_scalars() -> None:
    base: dict[str, Any] = {"s": {"k": {"name": "theirs", "keep": 1, "taints": {"g": ["a"]}}}, "other": True}
    ours = {"s": {"k": {"name": "ours", "taints": {"g": ["a", "b"], "h": ["c"]}}}}
    assert merge(base, ours) == {
        "s": {"k": {"name": "ours", "keep": 1, "taints": {"g": ["a", "b"], "h": ["c"]}}},
        "other": True,
    }
    assert base["s"]["k"]["name"] == "theirs"  # inputs are not modified
