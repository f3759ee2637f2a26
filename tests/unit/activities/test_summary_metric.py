"""The windowed summary (activities.metrics.summary): Karpenter's summary shape, with quantiles over the
last ten minutes and count and sum over all time."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from activities.metrics.summary import WindowedSummary, quantile


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def quantiles(registry: CollectorRegistry, **labels: str) -> dict[str, float]:
    text = generate_latest(registry).decode()
    [family] = [f for f in text_string_to_metric_families(text) if f.name == "t_seconds"]
    assert family.type == "summary"
    return {
        s.labels["quantile"]: s.value
        for s in family.samples
        if "quantile" in s.labels and {k: v for k, v in s.labels.items() if k != "quantile"} == labels
    }


def test_quantiles_cover_the_window_and_count_and_sum_all_time() -> None:
    registry, clock = CollectorRegistry(), Clock()
    summary = WindowedSummary("t_seconds", "t", ["nodepool"], registry=registry, clock=clock, max_age=600)
    for value in (1.0, 2.0, 3.0, 4.0, 10.0):
        summary.labels(nodepool="a").observe(value)
    assert quantiles(registry, nodepool="a") == {"0": 1.0, "0.5": 3.0, "0.9": 10.0, "0.99": 10.0, "1": 10.0}
    clock.now += 601  # all out of the window
    summary.labels(nodepool="a").observe(7.0)
    assert quantiles(registry, nodepool="a") == dict.fromkeys(("0", "0.5", "0.9", "0.99", "1"), 7.0)
    assert registry.get_sample_value("t_seconds_count", {"nodepool": "a"}) == 6
    assert registry.get_sample_value("t_seconds_sum", {"nodepool": "a"}) == 27.0
    clock.now += 601
    assert all(math.isnan(v) for v in quantiles(registry, nodepool="a").values())  # nothing in the window


def test_a_window_keeps_its_latest_observations_up_to_the_cap() -> None:
    registry = CollectorRegistry()
    summary = WindowedSummary("t_seconds", "t", registry=registry, clock=Clock(), max_kept=3)
    for value in (100.0, 1.0, 2.0, 3.0):
        summary.observe(value)
    assert quantiles(registry)["1"] == 3.0 and registry.get_sample_value("t_seconds_count") == 4


def test_labels_must_be_the_declared_ones() -> None:
    summary = WindowedSummary("t_seconds", "t", ["nodepool"])
    with pytest.raises(ValueError, match="nodepool"):
        summary.labels(zone="a")
    with pytest.raises(ValueError, match="labels"):
        summary.observe(1.0)


def test_the_nearest_rank_quantile() -> None:
    assert math.isnan(quantile([], 0.5))
    assert [quantile([1.0, 2.0], q) for q in (0.0, 0.5, 0.51, 1.0)] == [1.0, 1.0, 2.0, 2.0]
