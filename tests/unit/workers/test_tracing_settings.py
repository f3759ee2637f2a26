"""The worker's tracing as the OTEL_* environment variables configure it (workers.tracing): off unless an
exporter or an endpoint is given, spans posted to the endpoint given (a real HTTP receiver here), and a
value nodeflow cannot use refused naming the variable."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from workers import cli
from workers.cli import worker as worker_cmd
from workers.tracing import TracingSettingError, tracing_from_env


class Receiver:
    """An OTLP/HTTP receiver on a free local port: the requests' paths and decoded bodies."""

    def __init__(self) -> None:
        self.received: list[tuple[str, ExportTraceServiceRequest]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((self.path, ExportTraceServiceRequest.FromString(body)))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def span_names(self) -> list[str]:
        return [span.name for _, req in self.received for rs in req.resource_spans for ss in rs.scope_spans
                for span in ss.spans]  # fmt: skip

    def service_names(self) -> set[str]:
        return {
            attr.value.string_value
            for _, req in self.received
            for rs in req.resource_spans
            for attr in rs.resource.attributes
            if attr.key == "service.name"
        }


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_SERVICE_NAME": "nodeflow-prod"},
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
    ],
)
def test_tracing_is_off_without_an_exporter_or_an_endpoint(env: dict[str, str]) -> None:
    assert tracing_from_env(env) is None


def test_spans_go_to_the_endpoint_given_with_the_service_name(receiver: Receiver) -> None:
    tracing = tracing_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url + "/", "OTEL_SERVICE_NAME": "nf-test"})
    assert tracing is not None
    with tracing.tracer.start_as_current_span("round"):
        pass
    tracing.shutdown()  # flushes the batch
    assert [path for path, _ in receiver.received] == ["/v1/traces"]
    assert receiver.span_names() == ["round"]
    assert receiver.service_names() == {"nf-test"}


def test_the_traces_endpoint_wins_and_the_service_name_defaults_to_nodeflow(receiver: Receiver) -> None:
    tracing = tracing_from_env({
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",  # nothing listens there
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url + "/custom/traces",
    })  # fmt: skip
    assert tracing is not None
    with tracing.tracer.start_as_current_span("launch"):
        pass
    tracing.shutdown()
    assert [path for path, _ in receiver.received] == ["/custom/traces"]
    assert receiver.service_names() == {"nodeflow"}


def test_the_console_exporter_writes_spans_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    tracing = tracing_from_env({"OTEL_TRACES_EXPORTER": "console"})
    assert tracing is not None
    with tracing.tracer.start_as_current_span("solve"):
        pass
    tracing.shutdown()
    assert '"name": "solve"' in capsys.readouterr().out


def test_an_unknown_exporter_is_refused_naming_the_variable() -> None:
    with pytest.raises(TracingSettingError, match=r"^OTEL_TRACES_EXPORTER is 'otlp,jaeger': jaeger .*give otlp"):
        tracing_from_env({"OTEL_TRACES_EXPORTER": "otlp,jaeger"})


def test_a_grpc_protocol_is_refused_naming_the_variable() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    with pytest.raises(TracingSettingError, match=r"^OTEL_EXPORTER_OTLP_PROTOCOL is 'grpc'.*http/protobuf"):
        tracing_from_env(env)
    assert tracing_from_env({**env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}) is not None


def test_the_worker_refuses_a_bad_exporter_before_connecting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    monkeypatch.setattr(worker_cmd, "configure_logging", lambda *args: None)  # keep pytest's logging as it is
    args = cli.build_parser(["worker"]).parse_args(["worker", "--temporal-address", "127.0.0.1:9"])
    assert worker_cmd.run(args) == 2  # the command itself: the entry point's wrapper ends the process
    assert "nodeflow worker: OTEL_TRACES_EXPORTER is 'zipkin'" in capsys.readouterr().err
