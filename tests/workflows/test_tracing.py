"""On a real (dev) Temporal server, with the worker's tracing (workers.tracing) on a client as the worker
builds it (workers.temporal.client.connect): one trace runs from the signal-with-start a watcher sends,
through the provisioner's round and its `solve` and `apply_plan` activities, to the NodeClaim workflow
`apply_plan` starts (through the real TemporalStarter, from the activity's thread) and its `launch`; and
a later signal, to the provisioner already running, has its own trace of the round it asked for. And the
workflow-side helpers (workflows.signal_traces) on their own."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import inject
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio import activity
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker

from activities.provisioning.models import ApplyPlanInput, ApplyPlanResult, ProvisionPlan, ProvisionRound
from scheduling.types import PlannedNodeClaim
from tests.eventually import eventually_async
from tests.workflows.conftest import dev_server
from tests.workflows.fakes import World
from workers.settings import Settings
from workers.temporal.client import connect
from workers.temporal.starter import TemporalStarter
from workers.temporal.workflow_runner import CompactWorkflowRunner
from workers.tracing import Tracing
from workflows import search_attributes as sa
from workflows import timing
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.provisioner import WORKFLOW_ID, ProvisionerWorkflow
from workflows.signal_traces import SIGNAL_TRACES, traced_by, untraced


def claim_name(round_: int) -> str:
    """The claim round `round_` plans."""
    return f"default-trace-{round_}"


@activity.defn(name="solve")
def solve(rnd: ProvisionRound) -> ProvisionPlan:
    """A round that plans one node for one pod."""
    planned = PlannedNodeClaim(node_pool="default", instance_types=["m5.large"], requirements=[], pods=["a/b"], price=1)
    return ProvisionPlan(node_claims=[planned], pending_pods=1)


def apply_plan_starting(starter: TemporalStarter) -> Callable[..., Any]:
    """`apply_plan` as the real one ends: the round's NodeClaim's workflow started through `starter`
    (blocking, from the activity's thread, on the worker's event loop)."""

    @activity.defn(name="apply_plan")
    def apply_plan(inp: ApplyPlanInput) -> ApplyPlanResult:
        name, uid = claim_name(inp.round.round), f"uid-{inp.round.round}"
        claim = {"metadata": {"name": name, "uid": uid, "labels": {"karpenter.sh/nodepool": "default"}}}
        starter.start_node_claim(claim)
        return ApplyPlanResult()

    return apply_plan


def parents(spans: list[ReadableSpan], span: ReadableSpan) -> list[str]:
    """The names of `span`'s ancestors, nearest first."""
    by_id = {s.context.span_id: s for s in spans}
    names: list[str] = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        ancestor = by_id[parent.span_id]
        names.append(ancestor.name)
        parent = ancestor.parent
    return names


def launch_of(spans: list[ReadableSpan], claim: str) -> ReadableSpan | None:
    """The `launch` activity's span of `claim`'s workflow, once it ended."""
    launches = [s for s in spans if s.name == "RunActivity:launch"]
    return next((s for s in launches if dict(s.attributes or {}).get("temporalWorkflowID") == workflow_id(claim)), None)


async def test_each_round_is_in_the_trace_of_the_signal_that_asked_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "MAX_SIGNALS_PER_RUN", 2)  # the first run continues as new after round 2
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider)
    world = World(node_after_polls=-1)  # the claims stay registering: launch is what this test follows
    with dev_server([(key.name, "Keyword") for key in sa.ALL]) as server:
        client = await connect(Settings(temporal_address=server.address), interceptors=[tracing.interceptor])
        task_queue = f"tq-{uuid.uuid4()}"
        starter = TemporalStarter(client, task_queue, asyncio.get_running_loop(), "15m")
        activities = [a for a in world.activities() if a.__name__ not in ("solve", "apply_plan")]
        with ThreadPoolExecutor(max_workers=4) as executor:
            async with Worker(
                client,
                task_queue=task_queue,
                workflows=[ProvisionerWorkflow, NodeClaimWorkflow],
                activities=[*activities, solve, apply_plan_starting(starter)],
                activity_executor=executor,
                unsandboxed_workflow_runner=CompactWorkflowRunner(),
            ):
                for round_ in (1, 2, 3):  # what the pod watcher sends: the first starts the provisioner
                    await starter.signal_provisioner(3)

                    async def launched(claim: str = claim_name(round_)) -> list[ReadableSpan] | None:
                        spans = list(exporter.get_finished_spans())
                        return spans if launch_of(spans, claim) else None

                    spans = await eventually_async(launched, timeout=30, what=f"round {round_}'s launch span")
                    await client.get_workflow_handle(workflow_id(claim_name(round_))).terminate()
                await client.get_workflow_handle(WORKFLOW_ID).terminate()
                (first_run,) = [s for s in spans if s.name == "RunWorkflow:Provisioner"]  # the second has no trace
                run_id = str(dict(first_run.attributes or {})["temporalRunID"])
                history = await client.get_workflow_handle(WORKFLOW_ID, run_id=run_id).fetch_history()

    signals = sorted(
        (s for s in spans if s.name == "SignalWithStartWorkflow:Provisioner"), key=lambda s: s.start_time or 0
    )
    assert len(signals) == 3
    traces = [signal.context.trace_id for signal in signals]
    assert len(set(traces)) == 3  # a round per signal, a trace per round, before continue-as-new and after
    for round_, signal in enumerate(signals, start=1):
        in_trace = [s for s in spans if s.context.trace_id == signal.context.trace_id]
        names = [s.name for s in in_trace]
        for name in ("RunActivity:solve", "RunActivity:apply_plan", "StartWorkflow:NodeClaim", "RunActivity:launch"):
            assert names.count(name) == 1, f"round {round_}: {name} in {names}"
        # A workflow's outbound calls are children of the call that started it (the interceptor records
        # RunWorkflow beside them, as a completed span, since a workflow may replay); the round's, of the
        # signal that asked for it.
        launch = launch_of(in_trace, claim_name(round_))
        assert launch is not None and parents(spans, launch) == [
            "StartActivity:launch",
            "StartWorkflow:NodeClaim",
            "RunActivity:apply_plan",
            "StartActivity:apply_plan",
            "SignalWithStartWorkflow:Provisioner",
        ]
        run_solve = next(s for s in in_trace if s.name == "RunActivity:solve")
        assert run_solve.parent is not None
        start_solve = next(s for s in in_trace if s.context.span_id == run_solve.parent.span_id)
        assert start_solve.name == "StartActivity:solve"
        assert start_solve.parent is not None and start_solve.parent.span_id == signal.context.span_id
    # The first run's trace is the first signal's; the second signal's handling is linked from it. The run
    # continued as new has no trace: no trace lasts the provisioner's life.
    handled = [s for s in spans if s.name == "HandleSignal:pods_pending"]
    assert len(handled) == 2 and {s.context.trace_id for s in handled} == {traces[0]}
    assert any(link.context.span_id == signals[1].context.span_id for s in handled for link in s.links)
    # The traced first run replays with tracing on (the signals' headers and all), and replay records no span.
    recorded = len(exporter.get_finished_spans())
    replayer = Replayer(
        workflows=[ProvisionerWorkflow],
        data_converter=pydantic_data_converter,
        interceptors=[tracing.interceptor],
        unsandboxed_workflow_runner=CompactWorkflowRunner(),
    )
    await replayer.replay_workflow(history)
    assert len(exporter.get_finished_spans()) == recorded


class Traces:
    """workflows.signal_traces.SignalTraces giving `context` once."""

    def __init__(self, context: otel_context.Context) -> None:
        self.context: otel_context.Context | None = context
        self.taken: list[str] = []

    def take(self, signal: str) -> otel_context.Context | None:
        self.taken.append(signal)
        context, self.context = self.context, None
        return context


def test_traced_by_runs_the_block_in_the_signals_trace_once_and_untraced_in_none() -> None:
    tracer = TracerProvider().get_tracer("test")
    run, signal = tracer.start_span("run"), tracer.start_span("signal")
    traces = Traces(trace.set_span_in_context(signal))
    token = otel_context.attach(otel_context.set_value(SIGNAL_TRACES, traces, trace.set_span_in_context(run)))
    try:
        with traced_by("pods_pending"):
            assert trace.get_current_span() is signal
        assert trace.get_current_span() is run
        with traced_by("pods_pending"):  # no signal since the last round: the workflow's own trace
            assert trace.get_current_span() is run
        assert traces.taken == ["pods_pending", "pods_pending"]
        with untraced():  # what a continue-as-new under it carries: no trace, the interceptor still there
            carrier: dict[str, str] = {}
            inject(carrier)
            assert carrier == {} and otel_context.get_value(SIGNAL_TRACES) is traces
        assert trace.get_current_span() is run
    finally:
        otel_context.detach(token)


def test_without_tracing_the_helpers_leave_the_context_as_it_is() -> None:
    before = otel_context.get_current()
    with traced_by("pods_pending"), untraced():
        assert otel_context.get_current() is before
