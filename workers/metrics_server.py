"""The worker's two Prometheus endpoints, both served on all interfaces:

- `--metrics-port` (default 8080, as Karpenter's): `/metrics`, nodeflow's Karpenter-named metrics
  (activities.metrics.registry) and the process's own (`process_*`, `python_gc_*`, `python_info`), exposed by
  prometheus-client's HTTP server in a daemon thread;
- `--temporal-metrics-port` (default 8082): the Temporal SDK's metrics (`temporal_*`: workflow task
  latencies, schedule-to-start, sticky cache hits and size, activity latencies and failures, pollers,
  slots), exposed at
  `/metrics` by the SDK's core runtime itself (`temporal_runtime`), which every Temporal client and worker
  of the process then uses.

Port 0 turns either off. A port already taken fails the worker at start with a MetricsPortError naming
the setting (`nodeflow worker` prints it in one line).
"""

from __future__ import annotations

import logging
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector, start_http_server
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from workers.settings import where

log = logging.getLogger(__name__)


class MetricsPortError(Exception):
    """A metrics port that cannot be listened on; the message names the setting."""


def add_process_collectors(registry: CollectorRegistry) -> None:
    """The process's own metrics on `registry`: `process_*` (RSS, CPU seconds, ...), `python_gc_*`,
    `python_info`."""
    for collector in (ProcessCollector, PlatformCollector, GCCollector):
        collector(registry=registry)


class MetricsServer:
    """`registry` on `port`'s `/metrics` (port 0: none). `start()` listens (MetricsPortError when the port
    is taken), `close()` stops."""

    def __init__(self, registry: CollectorRegistry, port: int, host: str = "0.0.0.0") -> None:
        self.registry = registry
        self.port = port
        self.host = host
        self._server: WSGIServer | None = None

    def start(self) -> None:
        if not self.port:
            return
        add_process_collectors(self.registry)
        try:
            self._server, _thread = start_http_server(self.port, self.host, self.registry)
        except OSError as err:
            raise MetricsPortError(
                f"{where('metrics_port')}: cannot listen on port {self.port}: {err.strerror}"
            ) from None
        log.info("metrics on port %d: /metrics", self.port)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def temporal_runtime(port: int, host: str = "0.0.0.0") -> Runtime | None:
    """A Temporal runtime exporting the SDK's metrics in Prometheus form on `host`:`port` (None for 0: the
    SDK's default runtime, no metrics endpoint). Durations are in seconds (the names keep the SDK's,
    without a unit suffix: `temporal_workflow_task_schedule_to_start_latency`) and counters end in
    `_total`. Raises MetricsPortError when the port cannot be
    bound."""
    if not port:
        return None
    config = PrometheusConfig(bind_address=f"{host}:{port}", counters_total_suffix=True, durations_as_seconds=True)
    try:
        runtime = Runtime(telemetry=TelemetryConfig(metrics=config))
    except ValueError as err:  # the SDK's core reports a bind failure so
        raise MetricsPortError(f"{where('temporal_metrics_port')}: {err}") from None
    log.info("Temporal SDK metrics on port %d: /metrics", port)
    return runtime
