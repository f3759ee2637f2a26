"""Starting workflows from the worker: NodeClaim workflows (from the provisioning activity, which runs in
a thread) and signal-with-start of the singleton provisioner (from the watchers); signals to NodeClaim
workflows (from the watchers, the leader's loops and the disruption controller's activity), named by
workflows.messages.NodeClaimSignal; the activities, which cannot import the workflows, ask by intent
(`delete_node_claims`, `expire_node_claim`, `check_node_claim_drift`)."""

from __future__ import annotations

import asyncio

from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from kube.types import Obj
from workflows import search_attributes as sa
from workflows.messages import NodeClaimSignal, ProvisionerSignal
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import (
    LAUNCHING,
    ClaimSettings,
    NodeClaimInput,
    NodeClaimState,
    node_claim_input_from_object,
)
from workflows.provisioner import WORKFLOW_ID, BatchWindow, ProvisionerState, ProvisionerWorkflow

START_TIMEOUT_SECONDS = 30.0


class TemporalStarter:
    """Implements activities.provisioning.claim_creation.WorkflowStarter over a Temporal client living on `loop`."""

    def __init__(
        self,
        client: Client,
        task_queue: str,
        loop: asyncio.AbstractEventLoop,
        registration_ttl: str,
        batch_window: BatchWindow | None = None,
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.loop = loop
        self.settings = ClaimSettings(registration_ttl=registration_ttl)
        self.batch_window = batch_window or BatchWindow()

    def claim_input(self, claim: Obj, waiter: str = "") -> NodeClaimInput:
        """The workflow input of this NodeClaim object (workflows.nodeclaim_state.node_claim_input) with
        this worker's settings and `waiter`."""
        return node_claim_input_from_object(claim, self.settings, waiter)

    async def start_node_claim_async(self, claim_input: NodeClaimInput) -> None:
        """Start the claim's workflow, or leave the running one alone (id conflict policy USE_EXISTING)."""
        await self.client.start_workflow(
            NodeClaimWorkflow.run,
            claim_input,
            id=workflow_id(claim_input.name),
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(sa.NODE_POOL, claim_input.node_pool), SearchAttributePair(sa.PHASE, LAUNCHING)]
            ),
            # The fleet view from the start (start attributes are no upsert, no billable action).
            memo={"summary": NodeClaimState(name=claim_input.name, node_pool=claim_input.node_pool).summary()},
        )

    def start_node_claim(self, claim: Obj, waiter: str = "") -> None:
        """activities.provisioning.claim_creation.WorkflowStarter: thread-safe, blocking, for activities running in the
        worker's thread pool."""
        coro = self.start_node_claim_async(self.claim_input(claim, waiter))
        asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=START_TIMEOUT_SECONDS)

    async def signal_provisioner(self, pending_pods: int = 0) -> None:
        """Ask the singleton provisioner for a round (signal-with-start: atomic, so concurrent callers never
        race); `pending_pods` is how many pending pods the caller saw (0: unknown, just run a round). The
        signal carries this worker's batch window, which the provisioner's rounds then follow."""
        await self.client.start_workflow(
            ProvisionerWorkflow.run,
            ProvisionerState(),
            id=WORKFLOW_ID,
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            start_signal=ProvisionerSignal.PODS_PENDING,
            start_signal_args=[pending_pods, self.batch_window],
        )

    def delete_node_claims(self, names: list[str], reason: str) -> list[str]:
        """activities.disruption.execution.ClaimSignaller: signal `delete` to every claim's workflow at once
        (each a direct RPC to its own workflow); the names whose workflow was running. Thread-safe, blocking."""

        async def signal_all() -> list[bool]:
            return await asyncio.gather(
                *(self.signal_node_claim(name, NodeClaimSignal.DELETE, reason) for name in names)
            )

        found = asyncio.run_coroutine_threadsafe(signal_all(), self.loop).result(timeout=START_TIMEOUT_SECONDS)
        return [name for name, running in zip(names, found, strict=True) if running]

    async def expire_node_claim(self, name: str, reason: str) -> bool:
        """activities.nodeclaim.sweep.ClaimSignaller: signal `expire` to a claim's workflow."""
        return await self.signal_node_claim(name, NodeClaimSignal.EXPIRE, reason)

    async def check_node_claim_drift(self, name: str, reason: str) -> bool:
        """activities.nodeclaim.sweep.ClaimSignaller: signal `check_drift` to a claim's workflow."""
        return await self.signal_node_claim(name, NodeClaimSignal.CHECK_DRIFT, reason)

    async def signal_node_claim(self, name: str, signal: NodeClaimSignal, reason: str) -> bool:
        """Signal a claim's workflow; False when it is not running."""
        try:
            await self.client.get_workflow_handle(workflow_id(name)).signal(signal, reason)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return True
