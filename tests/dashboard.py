"""The Grafana dashboard the chart ships (deploy/charts/nodeflow/dashboards/nodeflow.json): its PromQL
expressions and the metric names they read, for the tests that check each name is exported."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[1] / "deploy" / "charts" / "nodeflow" / "dashboards" / "nodeflow.json"
KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
                      "offset", "inf", "nan"})  # fmt: skip
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIERS = re.compile(r"\b([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()")
_LABEL_VALUES = re.compile(r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,")


def load() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def expressions(dashboard: dict[str, Any] | None = None) -> list[str]:
    """Every panel target's PromQL expression."""
    board = dashboard or load()
    return [t["expr"] for p in board["panels"] for t in p.get("targets", []) if t.get("expr")]


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: its identifiers once string literals, label matchers,
    range selectors and label lists (`by (...)`, `on (...)`, ...) are taken out, less function names (an
    identifier followed by `(`) and keywords."""
    for pattern in (_STRINGS, _MATCHERS, _RANGES, _LABEL_LISTS):
        expr = pattern.sub(" ", expr)
    return {name for name in _IDENTIFIERS.findall(expr) if name.lower() not in KEYWORDS}


def dashboard_metrics(prefix: str = "") -> set[str]:
    """The metric names (as scraped: `_total`, `_bucket`) of the dashboard's panels and variable queries
    that start with `prefix`."""
    board = load()
    names = {name for expr in expressions(board) for name in metric_names(expr)}
    for variable in board["templating"]["list"]:
        names |= set(_LABEL_VALUES.findall(str(variable.get("definition", ""))))
    return {name for name in names if name.startswith(prefix)}
