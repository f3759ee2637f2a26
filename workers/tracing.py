"""Traces (OpenTelemetry) for the worker, configured by the standard `OTEL_*` environment variables.

One trace follows a provisioning round: the watcher's signal-with-start of the provisioner (the Temporal
client's span), the provisioner workflow, its `solve` and `apply_plan` activities, the NodeClaim workflows
`apply_plan` starts, their `launch` activity, and the EC2 and Kubernetes calls inside activities. The
Temporal spans come from the SDK's `temporalio.contrib.opentelemetry.TracingInterceptor` on the worker's
client (it applies to the worker built on that client too); the calls' spans from `instrument_boto3` (botocore
event hooks on each boto3 client) and `TracedKube` (around the Kubernetes client), for calls made within
a trace: the leader's Lease renewals, the watchers' lists and the catalog warm-up, outside any, make no
root spans of their own every few seconds. The SDK's workflow interceptor keeps one context per
workflow run; nodeflow's subclass also records each signal's, so that a provisioner round continues the
trace of the first `pods_pending` signal since the previous round (workflows.signal_traces), whether that
signal started the run or came to a run already going: one trace per pending pod's round, not one per
provisioner run; and the provisioner continues as new outside its trace, so no trace lasts its life.
Workflow spans are recorded once, not on replay.

Configuration (`tracing_from_env`):

| variable | meaning |
| --- | --- |
| OTEL_TRACES_EXPORTER | otlp (OTLP over HTTP/protobuf), console (stdout), none, or a comma-separated list |
| OTEL_EXPORTER_OTLP_ENDPOINT | the collector's base URL (`/v1/traces` is appended); default http://localhost:4318 |
| OTEL_EXPORTER_OTLP_TRACES_ENDPOINT | the full URL for traces, over the one above |
| OTEL_EXPORTER_OTLP_PROTOCOL, ..._TRACES_PROTOCOL | http/protobuf only (the one exporter installed) |
| OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES | the resource; the service name defaults to nodeflow |
| OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG | the sampler (the SDK's; default parentbased_always_on) |
| OTEL_EXPORTER_OTLP_HEADERS, ..._TIMEOUT, ..._CERTIFICATE, ... | read by the OTLP exporter as documented |
| OTEL_SDK_DISABLED | true: tracing off whatever else is set |

Tracing is on when OTEL_TRACES_EXPORTER names an exporter, or, with it unset, when an OTLP endpoint is
given; otherwise it is entirely off: no tracer provider, no interceptor, no hooks. Span attributes name
operations, resources and ids only: never request bodies, user data or credentials.
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry.context import Context, get_current, set_value
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, get_current_span
from temporalio.contrib.opentelemetry import TracingInterceptor, TracingWorkflowInboundInterceptor
from temporalio.worker import HandleSignalInput, WorkflowInboundInterceptor, WorkflowInterceptorClassInput

from kube.resources import POD
from kube.resources import Resource as KubeResource
from kube.types import Kube, Obj, PatchType
from workflows.signal_traces import SIGNAL_TRACES

EXPORTER = "OTEL_TRACES_EXPORTER"
EXPORTERS = ("otlp", "console", "none")
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_SERVICE_NAME = "nodeflow"
TRACER_NAME = "nodeflow"
_SPAN_KEY = "nodeflow_span"  # where a botocore call's span waits in the call's request context


class TracingSettingError(ValueError):
    """An OTEL_* variable has a value nodeflow cannot use; the message names the variable and the fix."""


class Tracing:
    """A tracer provider and what the worker installs with it: the Temporal interceptor, the boto3 hooks and
    the Kubernetes client's wrapper. `shutdown` exports what is buffered."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer: Tracer = provider.get_tracer(TRACER_NAME)
        self.interceptor = SignalTracingInterceptor(self.tracer)

    def instrument_boto3(self, client: Any) -> None:
        """Spans around every API call of `client` (a boto3 client); see `instrument_boto3`."""
        instrument_boto3(client, self.tracer)

    def kube(self, kube: Kube) -> Kube:
        return TracedKube(kube, self.tracer)

    def shutdown(self) -> None:
        self.provider.shutdown()


def tracing_from_env(env: Mapping[str, str] | None = None) -> Tracing | None:
    """The worker's tracing as the OTEL_* variables of `env` (default: the process's) configure it, or None
    when they turn it off (module docstring). Raises TracingSettingError for an exporter or protocol
    nodeflow does not have."""
    env = dict(os.environ if env is None else env)
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporters = _exporter_names(env)
    if not exporters:
        return None
    resource = Resource.create({SERVICE_NAME: env.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME})
    provider = TracerProvider(resource=resource)
    for name in exporters:
        provider.add_span_processor(BatchSpanProcessor(_exporter(name, env)))
    return Tracing(provider)


def _exporter_names(env: Mapping[str, str]) -> list[str]:
    """The exporters asked for: OTEL_TRACES_EXPORTER's, else otlp when an endpoint is given, else none."""
    value = env.get(EXPORTER, "").strip()
    if not value:
        return ["otlp"] if any(env.get(name, "").strip() for name in ENDPOINTS) else []
    names = [name.strip().lower() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        raise TracingSettingError(
            f"{EXPORTER} is {value!r}: {', '.join(unknown)} is not an exporter nodeflow has; give otlp, console "
            "or none (a comma-separated list for several)"
        )
    return [name for name in dict.fromkeys(names) if name != "none"]


def _exporter(name: str, env: Mapping[str, str]) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter(out=sys.stdout)  # the stdout of now, not of import time
    given = [(variable, env[variable].strip()) for variable in PROTOCOLS if env.get(variable, "").strip()]
    if given and given[0][1] != "http/protobuf":  # the traces-specific variable, when set, wins
        variable, protocol = given[0]
        raise TracingSettingError(
            f"{variable} is {protocol!r}: nodeflow exports OTLP over HTTP only; give http/protobuf (the "
            "collector's port 4318) or leave it unset"
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=_traces_endpoint(env))


def _traces_endpoint(env: Mapping[str, str]) -> str:
    """The URL spans are posted to, as the OTLP exporter specification derives it."""
    traces = env.get(ENDPOINTS[0], "").strip()
    if traces:
        return traces
    base = env.get(ENDPOINTS[1], "").strip() or "http://localhost:4318"
    return f"{base.rstrip('/')}/v1/traces"


# -- Temporal: the SDK's interceptor, with signals' traces for workflows -----------------------------------


class SignalTracingInterceptor(TracingInterceptor):
    """The SDK's `TracingInterceptor` (client, activity and workflow spans), whose workflow side also
    records signals' trace contexts for workflows.signal_traces."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[TracingWorkflowInboundInterceptor]:
        super().workflow_interceptor_class(input)  # registers the function workflow spans are recorded with
        return SignalTracingWorkflowInboundInterceptor


class SignalTracingWorkflowInboundInterceptor(TracingWorkflowInboundInterceptor):
    """One per workflow run: the SDK's workflow spans, and workflows.signal_traces.SignalTraces on the
    workflow's context. Keeps, per signal name, the trace context the first signal since the last `take`
    carried (a watcher's span, a NodeClaim workflow's); signals without one (sent outside any trace) leave
    nothing to take."""

    def __init__(self, next: WorkflowInboundInterceptor) -> None:
        super().__init__(next)
        self._signal_carriers: dict[str, dict[str, Any]] = {}

    async def handle_signal(self, input: HandleSignalInput) -> None:
        header = input.headers.get(self.header_key)
        if header and input.signal not in self._signal_carriers:
            carrier = self.payload_converter.from_payloads([header])[0]
            if carrier:
                self._signal_carriers[input.signal] = carrier
        await super().handle_signal(input)

    def take(self, signal: str) -> Context | None:
        carrier = self._signal_carriers.pop(signal, None)
        if carrier is None:
            return None
        # On the current context: the SDK's values on it (this interceptor) stay, the span is the signal's.
        return self.text_map_propagator.extract(carrier, context=get_current())

    def _set_on_context(self, context: Context) -> Context:
        # The SDK puts its interceptor on every context it runs workflow code under; so does nodeflow.
        return set_value(SIGNAL_TRACES, self, super()._set_on_context(context))


# -- AWS: botocore event hooks ----------------------------------------------------------------------------


def instrument_boto3(client: Any, tracer: Tracer) -> None:
    """A client span around every API call of `client` (a boto3 client) made within a trace, retries
    included, named `Service.Operation` (`EC2.RunInstances`), with the RPC attributes of OpenTelemetry's
    AWS SDK conventions, the region, the HTTP status, the AWS error code and the request id. Parameters
    and responses are not recorded (they carry user data and tags)."""
    events = client.meta.events
    region = client.meta.region_name
    events.register("before-call", _before_call(tracer, region))
    events.register("after-call", _after_call)
    events.register("after-call-error", _after_call_error)


def _in_trace() -> bool:
    """Whether a span is current (an activity's, a workflow call's): the calls traced are the ones in a trace."""
    return get_current_span().get_span_context().is_valid


def _before_call(tracer: Tracer, region: str) -> Any:
    def start(model: Any, context: dict[str, Any], **_: Any) -> None:
        if not _in_trace():
            return
        service = model.service_model.service_id
        context[_SPAN_KEY] = tracer.start_span(
            f"{service}.{model.name}",
            kind=SpanKind.CLIENT,
            attributes={
                "rpc.system": "aws-api",
                "rpc.service": str(service),
                "rpc.method": model.name,
                "cloud.region": region or "",
            },
        )

    return start


def _after_call(http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    span = context.pop(_SPAN_KEY, None)
    if span is None:
        return
    status = int(getattr(http_response, "status_code", 0) or 0)
    span.set_attribute("http.response.status_code", status)
    request_id = (parsed.get("ResponseMetadata") or {}).get("RequestId")
    if request_id:
        span.set_attribute("aws.request_id", str(request_id))
    if status >= 300:
        code = str((parsed.get("Error") or {}).get("Code") or status)
        span.set_attribute("error.type", code)
        span.set_status(Status(StatusCode.ERROR, code))
    span.end()


def _after_call_error(exception: BaseException, context: dict[str, Any], **_: Any) -> None:
    span = context.pop(_SPAN_KEY, None)
    if span is None:
        return
    span.set_attribute("error.type", type(exception).__name__)
    span.set_status(Status(StatusCode.ERROR, type(exception).__name__))
    span.end()


# -- Kubernetes: a wrapper around the client ---------------------------------------------------------------


class TracedKube:
    """`kube` with a client span around each request-response call made within a trace (`kube.get
    NodeClaim`), attributed with the resource, namespace and name; never the body. Watches pass through
    untraced: they are long-lived streams, not calls. Other attributes of `kube` (`close`) pass through."""

    def __init__(self, kube: Kube, tracer: Tracer) -> None:
        self._kube = kube
        self._tracer = tracer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kube, name)

    @contextmanager
    def _span(
        self, verb: str, resource: KubeResource, namespace: str | None = None, name: str | None = None
    ) -> Iterator[None]:
        if not _in_trace():
            yield
            return
        attributes = {"k8s.verb": verb, "k8s.resource": resource.plural, "k8s.api_version": resource.api_version}
        if namespace:
            attributes["k8s.namespace.name"] = namespace
        if name:
            attributes["k8s.object.name"] = name
        with self._tracer.start_as_current_span(
            f"kube.{verb} {resource.kind}", kind=SpanKind.CLIENT, attributes=attributes, record_exception=False
        ) as span:
            try:
                yield
            except Exception as err:
                span.set_attribute("error.type", type(err).__name__)
                raise

    def get(self, resource: KubeResource, name: str, namespace: str | None = None) -> Obj:
        with self._span("get", resource, namespace, name):
            return self._kube.get(resource, name, namespace)

    def list(
        self,
        resource: KubeResource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[Obj]:
        with self._span("list", resource, namespace):
            return self._kube.list(resource, namespace, label_selector, field_selector)

    def list_with_version(
        self,
        resource: KubeResource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[builtins.list[Obj], str]:
        with self._span("list", resource, namespace):
            return self._kube.list_with_version(resource, namespace, label_selector, field_selector)

    def create(self, resource: KubeResource, obj: Obj, namespace: str | None = None) -> Obj:
        name = (obj.get("metadata") or {}).get("name")
        with self._span("create", resource, namespace or (obj.get("metadata") or {}).get("namespace"), name):
            return self._kube.create(resource, obj, namespace)

    def patch(
        self,
        resource: KubeResource,
        name: str,
        patch: Obj | builtins.list[Obj],
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
    ) -> Obj:
        with self._span("patch", resource, namespace, name):
            return self._kube.patch(resource, name, patch, namespace, patch_type, subresource)

    def replace(self, resource: KubeResource, obj: Obj, subresource: str | None = None) -> Obj:
        metadata = obj.get("metadata") or {}
        with self._span("update", resource, metadata.get("namespace"), metadata.get("name")):
            return self._kube.replace(resource, obj, subresource)

    def delete(
        self,
        resource: KubeResource,
        name: str,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> None:
        with self._span("delete", resource, namespace, name):
            self._kube.delete(resource, name, namespace, grace_period_seconds, preconditions)

    def evict(self, namespace: str, name: str) -> None:
        with self._span("evict", POD, namespace, name):
            self._kube.evict(namespace, name)

    def watch(
        self,
        resource: KubeResource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 60,
    ) -> Iterator[tuple[str, Obj]]:
        return self._kube.watch(resource, namespace, label_selector, field_selector, resource_version, timeout_seconds)
