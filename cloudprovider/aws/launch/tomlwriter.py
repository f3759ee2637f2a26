"""A small TOML writer and a key-by-key merge, for Bottlerocket user data (read with `tomllib`).

`dumps(doc)` writes what `tomllib.loads` reads back as `doc`: tables as `[a.b]` headers (each table
once), lists of tables as `[[a.b]]`, scalars (str, int, float, bool, dates and times) and lists of
scalars inline. Keys that are not bare (`[A-Za-z0-9_-]+`) are quoted.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def merge(base: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `ours` merged in key by key: tables merge recursively, lists gain the items of
    `ours` they lack (in order), and any other value of `ours` replaces the one in `base`."""
    merged = dict(base)
    for key, value in ours.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = merge(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            merged[key] = old + [v for v in value if v not in old]
        else:
            merged[key] = value
    return merged


def dumps(doc: Mapping[str, Any]) -> str:
    """`doc` as TOML text (ends with a newline when not empty)."""
    lines: list[str] = []
    _table(doc, (), lines)
    return "\n".join(lines).strip("\n") + "\n" if lines else ""


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _has_scalars(table: Mapping[str, Any]) -> bool:
    return any(not isinstance(v, Mapping) and not _is_table_list(v) for v in table.values())


def _table(table: Mapping[str, Any], path: tuple[str, ...], lines: list[str]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping) and not _is_table_list(v)}
    for key, value in scalars.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in table.items():
        if isinstance(value, Mapping):
            sub = (*path, key)
            if _has_scalars(value) or not value:  # a header only for a table with keys of its own
                lines += ["", f"[{'.'.join(_key(k) for k in sub)}]"]
            _table(value, sub, lines)
        elif _is_table_list(value):
            sub = (*path, key)
            for item in value:
                lines += ["", f"[[{'.'.join(_key(k) for k in sub)}]]"]
                _table(item, sub, lines)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    # A JSON string is a TOML basic string, once DEL (which JSON leaves raw) is escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007F")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
