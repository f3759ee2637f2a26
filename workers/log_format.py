"""The processes' log output: `text` (one human-readable line per record) or `json` (one JSON object per
line, for a log pipeline), chosen by `--log-format` or NODEFLOW_LOG_FORMAT.

A JSON line has `timestamp` (UTC, RFC 3339, milliseconds), `level`, `logger` and `message`, `exception`
(the traceback) when one is logged, and, where known:

- `workflow_id`, `run_id`, `workflow_type`, `activity_type`: from the `extra` the Temporal SDK's workflow
  and activity loggers add, else from the activity the logging thread runs;
- `nodeclaim`, `nodepool`, `node`: from the record's `extra` when the caller gives them; `nodeclaim` also
  from a NodeClaim workflow's id;
- `trace_id`, `span_id`: the current span's, when tracing is on (workers.tracing).

AWS SDK and HTTP libraries log at INFO at most, whatever the level asked for: at DEBUG they write request
bodies (the nodes' user data) and headers.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from opentelemetry import trace
from temporalio import activity

FORMATS = ("text", "json")
ENV = "NODEFLOW_LOG_FORMAT"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
NODECLAIM_WORKFLOW_PREFIX = "nodeclaim-"  # workflows.nodeclaim_state.workflow_id
# Loggers that write request and response bodies or headers at DEBUG.
QUIET_LOGGERS = ("botocore", "boto3", "s3transfer", "urllib3", "kubernetes", "requests")
_FIELDS = ("nodeclaim", "nodepool", "node")


def add_argument(parser: Any) -> None:
    """`--log-format text|json`; unset keeps NODEFLOW_LOG_FORMAT, else text."""
    parser.add_argument(
        "--log-format", default=None, help=f"text or json (one JSON object per line); env {ENV}, default text"
    )


def log_format(flag: str | None, env: Mapping[str, str] | None = None) -> str:
    """The format asked for: the flag, else the environment, else text. A ValueError names the flag, the
    variable and the choices for any other value."""
    env = os.environ if env is None else env
    value = flag if flag is not None else env.get(ENV, "")
    chosen = value.strip().lower() or "text"
    if chosen not in FORMATS:
        raise ValueError(f"log_format (flag --log-format, env {ENV}) is {value!r}: give text or json")
    return chosen


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler `configure_logging` installs: a second call replaces it, and leaves others alone."""


def configure_logging(level: int, fmt: str, stream: TextIO | None = None) -> None:
    """Log records at `level` and above to `stream` (stderr) in `fmt` (text or json), replacing the handler
    an earlier call installed."""
    handler = _Handler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.INFO))


class JsonFormatter(logging.Formatter):
    """One JSON object per record (module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(_temporal(record))
        for name in _FIELDS:
            value = getattr(record, name, None)
            if value:
                line[name] = str(value)
        if "nodeclaim" not in line and line.get("workflow_type") == "NodeClaim":
            line["nodeclaim"] = str(line["workflow_id"]).removeprefix(NODECLAIM_WORKFLOW_PREFIX)
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            line["trace_id"] = format(span.trace_id, "032x")
            line["span_id"] = format(span.span_id, "016x")
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, default=str)


def _temporal(record: logging.LogRecord) -> dict[str, Any]:
    """The workflow and activity a record was logged in, from the SDK loggers' `extra`, else from the
    activity running in this thread."""
    workflow = getattr(record, "temporal_workflow", None)
    if isinstance(workflow, Mapping):
        return _present(workflow, workflow_id="workflow_id", run_id="run_id", workflow_type="workflow_type")
    details = getattr(record, "temporal_activity", None)
    if not isinstance(details, Mapping) and activity.in_activity():
        info = activity.info()
        details = {"workflow_id": info.workflow_id, "workflow_run_id": info.workflow_run_id,
                   "workflow_type": info.workflow_type, "activity_type": info.activity_type}  # fmt: skip
    if isinstance(details, Mapping):
        return _present(details, workflow_id="workflow_id", run_id="workflow_run_id",
                        workflow_type="workflow_type", activity_type="activity_type")  # fmt: skip
    return {}


def _present(details: Mapping[str, Any], **keys: str) -> dict[str, str]:
    """`details[source]` as `name` for each `name=source` given, leaving out empty values."""
    return {name: str(details[source]) for name, source in keys.items() if details.get(source)}
