"""On a real (dev) Temporal server: search attributes and memo make a visibility list the fleet view, and
the operator CLI's Temporal calls (list, query, signal) work against it."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from tests.eventually import eventually_async
from tests.workflows.conftest import dev_server, venv_binary
from tests.workflows.fakes import World
from workers.cli.ops import ClaimRow, OpsError, list_claims, query_claim, signal_claim
from workers.temporal.workflow_runner import CompactWorkflowRunner
from workflows import search_attributes as sa
from workflows.messages import NodeClaimSignal
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import DELETED, RUNNING, NodeClaimInput, NodeClaimState

DEADLINE_SECONDS = 20.0  # visibility is eventually consistent


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dev_client() -> AsyncIterator[Client]:
    with dev_server([(key.name, "Keyword") for key in sa.ALL]) as server:
        yield await Client.connect(server.address, data_converter=pydantic_data_converter)


async def temporal_cli(client: Client, *args: str) -> str:
    """Run the `temporal` CLI against the client's server (without blocking the worker's loop); its stdout."""
    address = client.service_client.config.target_host
    proc = await asyncio.create_subprocess_exec(
        venv_binary("temporal"), *args, "--address", address,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def start(client: Client, task_queue: str, name: str, pool: str) -> None:
    inp = NodeClaimInput(name=name, node_pool=pool)
    await client.start_workflow(NodeClaimWorkflow.run, inp, id=workflow_id(name), task_queue=task_queue)


async def test_a_list_filtered_by_nodepool_and_phase_shows_the_fleet(dev_client: Client) -> None:
    client = dev_client
    world = World(node_after_polls=1, ready_after_polls=1, launch_node_pool="", pods_on_node=1, terminate_polls=1)
    task_queue = f"tq-{uuid.uuid4()}"
    suffix = uuid.uuid4().hex[:5]
    names = {f"web-{suffix}-1": "web", f"web-{suffix}-2": "web", f"gpu-{suffix}-1": "gpu"}
    with ThreadPoolExecutor(max_workers=4) as executor:
        async with Worker(client, task_queue=task_queue, workflows=[NodeClaimWorkflow],
                          activities=world.activities(), activity_executor=executor,
                          unsandboxed_workflow_runner=CompactWorkflowRunner()):  # fmt: skip
            for name, pool in names.items():
                await start(client, task_queue, name, pool)

            async def web_running() -> list[ClaimRow] | None:
                rows = [r for r in await list_claims(client, node_pool="web", phase=RUNNING) if suffix in r.name]
                return rows if len(rows) == 2 else None

            rows = await eventually_async(
                web_running, timeout=DEADLINE_SECONDS, what="both web claims Running in visibility"
            )
            assert [r.name for r in rows] == sorted(n for n, p in names.items() if p == "web")
            for row in rows:
                assert (row.node_pool, row.phase, row.instance_type, row.zone, row.capacity_type) == (
                    "web",
                    RUNNING,
                    "m5.large",
                    "us-west-2a",
                    "on-demand",
                )
                assert row.node_name == "ip-10-0-0-1.us-west-2.compute.internal"
                assert row.summary.startswith(f"Running: {row.name} from web, m5.large in us-west-2a")

            async def gpu_running() -> list[ClaimRow] | None:
                rows = [r for r in await list_claims(client, node_pool="gpu", phase=RUNNING) if suffix in r.name]
                return rows or None

            gpu = await eventually_async(
                gpu_running, timeout=DEADLINE_SECONDS, what="the gpu claim Running in visibility"
            )
            assert [r.name for r in gpu] == [f"gpu-{suffix}-1"]

            state: NodeClaimState = await query_claim(client, f"gpu-{suffix}-1")
            assert state.phase == RUNNING and state.node_pool == "gpu"

            await signal_claim(client, f"gpu-{suffix}-1", NodeClaimSignal.DRAIN, "test")
            handle = client.get_workflow_handle(workflow_id(f"gpu-{suffix}-1"), result_type=NodeClaimState)
            final = await handle.result()
            assert final.phase == DELETED and final.termination_reason == "test"

            async def gpu_gone() -> bool:
                return not [r for r in await list_claims(client, node_pool="gpu") if suffix in r.name]

            await eventually_async(
                gpu_gone, timeout=DEADLINE_SECONDS, what="the drained claim to leave the running list"
            )

            # The Temporal CLI works the same: a signal without input, and the status query.
            web = sorted(n for n in names if n.startswith("web"))
            queried = json.loads(await temporal_cli(client, "workflow", "query", "--workflow-id", workflow_id(web[0]),
                                              "--name", "status", "-o", "json"))  # fmt: skip
            assert "Running" in json.dumps(queried)
            for name in web:
                await temporal_cli(client, "workflow", "signal", "--workflow-id", workflow_id(name), "--name", "expire")
            for name in web:
                done = await client.get_workflow_handle(workflow_id(name), result_type=NodeClaimState).result()
                assert done.phase == DELETED and done.expired and done.termination_reason == "expired (manual)"


async def test_signalling_a_claim_without_a_workflow_names_it(dev_client: Client) -> None:
    with pytest.raises(OpsError, match="nodeclaim-nope-12345"):
        await signal_claim(dev_client, "nope-12345", NodeClaimSignal.DRAIN, "")
    with pytest.raises(OpsError, match="nodeclaim-nope-12345"):
        await query_claim(dev_client, "nope-12345")


async def test_a_status_query_nobody_answers_says_to_check_the_worker(dev_client: Client) -> None:
    name = f"orphan-{uuid.uuid4().hex[:8]}"
    inp = NodeClaimInput(name=name, node_pool="default")
    handle = await dev_client.start_workflow(
        NodeClaimWorkflow.run, inp, id=workflow_id(name), task_queue=f"no-worker-{name}"
    )
    try:
        with pytest.raises(OpsError, match=r"did not answer the status query 2 times.*worker running"):
            await query_claim(dev_client, name, attempts=2, timeout=timedelta(seconds=1))
    finally:
        await handle.terminate("test over")


@workflow.defn(name="StartProbe", sandboxed=False)
class StartProbe:
    """What a run sees of its start, before and after it upserts (workers.temporal.workflow_runner's contract)."""

    def __init__(self) -> None:
        self.proceed = False

    @workflow.signal(name="proceed")
    def go_on(self) -> None:
        self.proceed = True

    @workflow.run
    async def run(self, name: str) -> dict[str, Any]:
        info = workflow.info()
        seen: dict[str, Any] = {
            "input": name,
            "memo": workflow.memo_value("summary", type_hint=str),
            "phase": info.typed_search_attributes.get(sa.PHASE),
            "node_pool": info.typed_search_attributes.get(sa.NODE_POOL),
            "untyped": dict(info.search_attributes),
            "last_completion": workflow.has_last_completion_result(),
        }
        await workflow.wait_condition(lambda: self.proceed)  # a later task: the run is cached, or replayed
        workflow.upsert_memo({"summary": "after"})
        workflow.upsert_search_attributes([sa.PHASE.value_set(DELETED)])
        typed = workflow.info().typed_search_attributes
        seen.update(memo_after=workflow.memo_value("summary", type_hint=str), phase_after=typed.get(sa.PHASE))
        seen["node_pool_after"] = typed.get(sa.NODE_POOL)
        return seen


@pytest.mark.parametrize("cached", [1000, 0], ids=["cached", "replayed-each-task"])
async def test_a_run_sees_its_start_memo_and_search_attributes_through_the_workers_runner(
    dev_client: Client, cached: int
) -> None:
    task_queue = f"tq-{uuid.uuid4()}"
    async with Worker(dev_client, task_queue=task_queue, workflows=[StartProbe], max_cached_workflows=cached,
                      unsandboxed_workflow_runner=CompactWorkflowRunner()):  # fmt: skip
        handle = await dev_client.start_workflow(
            StartProbe.run,
            "probe",
            id=f"probe-{uuid.uuid4()}",
            task_queue=task_queue,
            memo={"summary": "before"},
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(sa.PHASE, RUNNING), SearchAttributePair(sa.NODE_POOL, "web")]
            ),
        )

        async def waiting() -> bool:
            events = [e async for e in handle.fetch_history_events()]
            return any(e.HasField("workflow_task_completed_event_attributes") for e in events)

        await eventually_async(waiting, timeout=DEADLINE_SECONDS, what="the probe's first task to complete")
        await handle.signal(StartProbe.go_on)
        seen = await handle.result()
        described = await handle.describe()

    assert seen == {
        "input": "probe",
        "memo": "before",
        "phase": RUNNING,
        "node_pool": "web",
        "untyped": {},  # the one difference from the SDK's own runner (workers.temporal.workflow_runner)
        "last_completion": False,
        "memo_after": "after",
        "phase_after": DELETED,
        "node_pool_after": "web",
    }
    assert await described.memo_value("summary") == "after"
    assert described.typed_search_attributes.get(sa.PHASE) == DELETED
