"""benchmarks/scale.py's `--observability` switch: `off` turns the worker's metrics endpoints off and
leaves no OTEL_* variable for it; `on` points OTLP at a local sink that accepts and discards traces; the
benchmark's own environment is restored after; the worker's peak RSS is read from /proc."""

from __future__ import annotations

import os
import urllib.request

import psutil
import pytest

from benchmarks import scale


def test_off_turns_the_metrics_ports_off_and_removes_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "mine")
    with scale.observability("off") as (args, sink):
        assert args == ["--metrics-port", "0", "--temporal-metrics-port", "0"] and sink is None
        assert not [key for key in os.environ if key.startswith("OTEL_")]
    assert os.environ["OTEL_SERVICE_NAME"] == "mine"


def test_on_exports_to_a_local_sink_that_accepts_and_counts_traces() -> None:
    with scale.observability("on") as (args, sink):
        assert args == [] and sink is not None
        assert os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] == sink.endpoint
        request = urllib.request.Request(f"{sink.endpoint}/v1/traces", data=b"\x0a\x00", method="POST",
                                         headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200
        assert (sink.trace_requests, sink.trace_bytes) == (1, 2)
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in os.environ


def test_the_switch_is_parsed_and_the_peak_rss_read() -> None:
    assert scale.parse_args(["--pods", "2", "--observability", "off"]).observability == "off"
    assert scale.parse_args(["--pods", "2"]).observability == "on"
    peak = scale.peak_rss_bytes(os.getpid())
    # The process's own peak, never below its own current RSS (rss_bytes adds its children, which a
    # test worker running a local stack has).
    assert peak is not None and peak >= psutil.Process().memory_info().rss
