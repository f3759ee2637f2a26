"""On a real (dev) Temporal server, with the worker's tracing (workers.tracing) on a client as the worker
builds it (workers.temporal_client.connect): one trace runs from the signal-with-start a watcher sends,
through the provisioner's round and its `solve` and `apply_plan` activities, to the NodeClaim workflow
`apply_plan` starts (through the real TemporalStarter, from the activity's thread) and its `launch`."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio import activity
from temporalio.worker import Worker

from activities.provisioning_models import ApplyPlanInput, ApplyPlanResult, ProvisionPlan, ProvisionRound
from scheduling.types import PlannedNodeClaim
from tests.eventually import eventually_async
from tests.workflows.conftest import dev_server
from tests.workflows.fakes import World
from workers.settings import Settings
from workers.starter import TemporalStarter
from workers.temporal_client import connect
from workers.tracing import Tracing
from workflows import search_attributes as sa
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.provisioner import WORKFLOW_ID, ProvisionerWorkflow

CLAIM = "default-trace"


@activity.defn(name="solve")
def solve(rnd: ProvisionRound) -> ProvisionPlan:
    """A round that plans one node for one pod."""
    planned = PlannedNodeClaim(node_pool="default", instance_types=["m5.large"], requirements=[], pods=["a/b"], price=1)
    return ProvisionPlan(node_claims=[planned], pending_pods=1)


def apply_plan_starting(starter: TemporalStarter) -> Callable[..., Any]:
    """`apply_plan` as the real one ends: the NodeClaim's workflow started through `starter` (blocking, from
    the activity's thread, on the worker's event loop)."""

    @activity.defn(name="apply_plan")
    def apply_plan(inp: ApplyPlanInput) -> ApplyPlanResult:
        claim = {"metadata": {"name": CLAIM, "uid": "uid-1", "labels": {"karpenter.sh/nodepool": "default"}}}
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


async def test_one_trace_spans_the_provisioner_round_and_the_node_claims_launch() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider)
    world = World(node_after_polls=-1)  # the claim stays registering: launch is what this test follows
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
            ):
                await starter.signal_provisioner(3)  # what the pod watcher sends

                async def launched() -> list[ReadableSpan] | None:
                    spans = list(exporter.get_finished_spans())
                    return spans if any(s.name == "RunActivity:launch" for s in spans) else None

                spans = await eventually_async(launched, timeout=30, what="the NodeClaim's launch span")
                await client.get_workflow_handle(workflow_id(CLAIM)).terminate()
                await client.get_workflow_handle(WORKFLOW_ID).terminate()

    by_name = {s.name: s for s in spans}
    signal = by_name["SignalWithStartWorkflow:Provisioner"]
    launch = by_name["RunActivity:launch"]
    assert {s.context.trace_id for s in spans if s.name in (
        "SignalWithStartWorkflow:Provisioner", "RunWorkflow:Provisioner", "RunActivity:solve",
        "RunActivity:apply_plan", "StartWorkflow:NodeClaim", "RunWorkflow:NodeClaim", "RunActivity:launch",
    )} == {signal.context.trace_id}  # fmt: skip
    # A workflow's outbound calls are children of the call that started it (the interceptor records
    # RunWorkflow beside them, as a completed span, since a workflow may replay).
    assert parents(spans, launch) == [
        "StartActivity:launch",
        "StartWorkflow:NodeClaim",
        "RunActivity:apply_plan",
        "StartActivity:apply_plan",
        "SignalWithStartWorkflow:Provisioner",
    ]
    solve_parent = by_name["RunActivity:solve"].parent
    assert solve_parent is not None and solve_parent.span_id == by_name["StartActivity:solve"].context.span_id
    assert dict(launch.attributes or {})["temporalWorkflowID"] == workflow_id(CLAIM)
