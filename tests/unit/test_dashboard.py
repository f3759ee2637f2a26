"""The Grafana dashboard (tests.dashboard): valid JSON in Grafana's shape, and every PromQL expression reads
only metrics nodeflow exports: the names of its metrics registry and the process collectors `/metrics`
serves (the Temporal SDK's `temporal_*` are checked against a live scrape in tests/e2e/test_provisioning.py)."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry

from activities.metrics.registry import Metrics
from tests.dashboard import DASHBOARD, dashboard_metrics, expressions, load, metric_names
from workers.metrics_server import add_process_collectors

SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


def exported_names(registry: CollectorRegistry) -> set[str]:
    """Every sample name the registry can expose, whether or not a series has been set yet."""
    names: set[str] = set()
    for family in registry.collect():
        names |= {family.name + suffix for suffix in SUFFIXES.get(family.type, ("",))}
    return names


def test_the_dashboard_is_grafana_json_with_unique_panel_ids() -> None:
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] == "nodeflow" and board["title"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "job"]


def test_every_expression_names_only_metrics_nodeflow_exports() -> None:
    registry = Metrics().registry
    add_process_collectors(registry)
    exported = exported_names(registry)
    ours = {name for name in dashboard_metrics() if not name.startswith("temporal_")}
    assert ours - exported == set()
    assert {"karpenter_cloudprovider_instance_type_offering_price_estimate", "process_resident_memory_bytes",
            "temporal_workflow_task_schedule_to_start_latency_bucket"} <= dashboard_metrics()  # fmt: skip
    for expr in expressions(load()):
        assert metric_names(expr), expr  # every panel reads something


def test_metric_names_leaves_out_functions_labels_and_keywords() -> None:
    expr = (
        'sum by (nodepool) (count by (nodepool, zone) (a_total{reason!~"x|y", job=~"$job"}[5m]) '
        "* on (zone) group_left max by (zone) (b)) / bool c offset 1h"
    )
    assert metric_names(expr) == {"a_total", "b", "c"}
