"""The processes' log lines (workers.log_format): JSON objects with the record's fields, the Temporal
workflow or activity it came from, the NodeClaim, NodePool and node when known, and the current trace;
the format chosen by flag or environment, and a bad value refused naming both."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from temporalio import activity
from temporalio.testing import ActivityEnvironment

from workers import cli
from workers.cli import dev as dev_cmd
from workers.log_format import configure_logging, log_format

log = logging.getLogger("nodeflow.test")


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """JSON logs at INFO into a buffer for the test; the handler is dropped after it."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    out = io.StringIO()
    configure_logging(logging.INFO, "json", out)
    yield out
    root.handlers[:] = handlers
    root.setLevel(level)


def records(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_json_line_has_the_time_level_logger_message_and_the_fields_given(lines: io.StringIO) -> None:
    log.info("launched %s", "i-0123", extra={"nodeclaim": "default-abc", "nodepool": "default", "node": "ip-1"})
    [line] = records(lines)
    assert line["timestamp"].endswith("+00:00") and line["timestamp"][10] == "T"
    assert {k: v for k, v in line.items() if k != "timestamp"} == {
        "level": "INFO",
        "logger": "nodeflow.test",
        "message": "launched i-0123",
        "nodeclaim": "default-abc",
        "nodepool": "default",
        "node": "ip-1",
    }


def test_an_exception_is_one_line_with_its_traceback(lines: io.StringIO) -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("round failed")
    [line] = records(lines)
    assert line["level"] == "ERROR" and "RuntimeError: boom" in line["exception"]


def test_the_workflow_loggers_extra_gives_the_workflow_and_a_node_claims_name(lines: io.StringIO) -> None:
    details = {"workflow_id": "nodeclaim-default-abc", "run_id": "r-1", "workflow_type": "NodeClaim", "attempt": 1}
    log.warning("replace of default-abc not forwarded", extra={"temporal_workflow": details})
    [line] = records(lines)
    assert (line["workflow_id"], line["run_id"], line["workflow_type"]) == ("nodeclaim-default-abc", "r-1", "NodeClaim")
    assert line["nodeclaim"] == "default-abc"


def test_a_module_logger_in_an_activity_gives_the_activitys_workflow(lines: io.StringIO) -> None:
    @activity.defn(name="launch")
    def launch() -> None:
        log.info("launching")

    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id="nodeclaim-web-1", workflow_run_id="r-2",
                                   workflow_type="NodeClaim", activity_type="launch")  # fmt: skip
    env.run(launch)
    [line] = records(lines)
    assert (line["workflow_id"], line["run_id"], line["workflow_type"]) == ("nodeclaim-web-1", "r-2", "NodeClaim")
    assert (line["activity_type"], line["nodeclaim"]) == ("launch", "web-1")


def test_the_current_span_gives_the_trace_and_span_ids(lines: io.StringIO) -> None:
    tracer = TracerProvider().get_tracer("test")
    log.info("outside")
    with tracer.start_as_current_span("round") as span:
        log.info("inside")
    outside, inside = records(lines)
    assert "trace_id" not in outside and "span_id" not in outside
    assert inside["trace_id"] == format(span.get_span_context().trace_id, "032x")
    assert inside["span_id"] == format(span.get_span_context().span_id, "016x")


def test_text_is_the_default_and_the_flag_wins_over_the_environment() -> None:
    assert log_format(None, {}) == "text"
    assert log_format(None, {"NODEFLOW_LOG_FORMAT": "JSON"}) == "json"
    assert log_format("text", {"NODEFLOW_LOG_FORMAT": "json"}) == "text"


def test_a_bad_format_is_refused_naming_the_flag_and_the_variable() -> None:
    with pytest.raises(ValueError, match=r"log_format \(flag --log-format, env NODEFLOW_LOG_FORMAT\) is 'yaml'"):
        log_format("yaml", {})


def test_nodeflow_dev_refuses_a_bad_format_before_starting(capsys: pytest.CaptureFixture[str]) -> None:
    args = cli.build_parser(["dev"]).parse_args(["dev", "--log-format", "xml"])
    assert dev_cmd.run(args) == dev_cmd.EXIT_USAGE
    assert "nodeflow dev: log_format (flag --log-format" in capsys.readouterr().err


def test_nodeflow_dev_passes_the_format_to_its_worker() -> None:
    worker = dev_cmd.stack_config(log_format="json", start_worker=False).worker_command
    assert worker[-2:] == ["--log-format", "json"]
