"""Starting workflows from the worker: NodeClaim workflows (from the provisioning activity, which runs in
a thread) and signal-with-start of the singleton provisioner (from the watchers)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from workflows import search_attributes as sa
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import CURRENT_REVISION, DEFAULT_DRIFT_CHECK_INTERVAL, LAUNCHING, NodeClaimInput
from workflows.provisioner import SIGNAL, WORKFLOW_ID, ProvisionerState, ProvisionerWorkflow

START_TIMEOUT_SECONDS = 30.0


class TemporalStarter:
    """Implements activities.provisioning.WorkflowStarter over a Temporal client living on `loop`."""

    def __init__(
        self,
        client: Client,
        task_queue: str,
        loop: asyncio.AbstractEventLoop,
        registration_ttl: str,
        drift_check_interval: str = DEFAULT_DRIFT_CHECK_INTERVAL,
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.loop = loop
        self.registration_ttl = registration_ttl
        self.drift_check_interval = drift_check_interval

    async def start_node_claim_async(
        self,
        name: str,
        uid: str,
        node_pool: str,
        expire_after: str = "720h",
        termination_grace_period: str | None = None,
    ) -> None:
        """Start the claim's workflow, or leave the running one alone (id conflict policy USE_EXISTING)."""
        await self.client.start_workflow(
            NodeClaimWorkflow.run,
            NodeClaimInput(
                name=name,
                claim_uid=uid,
                node_pool=node_pool,
                expire_after=expire_after,
                termination_grace_period=termination_grace_period,
                registration_ttl=self.registration_ttl,
                drift_check_interval=self.drift_check_interval,
                revision=CURRENT_REVISION,
            ),
            id=workflow_id(name),
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(sa.NODE_POOL, node_pool), SearchAttributePair(sa.PHASE, LAUNCHING)]
            ),
        )

    def start_node_claim(
        self, name: str, uid: str, node_pool: str, expire_after: str, termination_grace_period: str | None
    ) -> None:
        """Thread-safe, blocking form for activities running in the worker's thread pool."""
        coro = self.start_node_claim_async(name, uid, node_pool, expire_after, termination_grace_period)
        asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=START_TIMEOUT_SECONDS)

    async def signal_provisioner(self, keys: Sequence[str]) -> None:
        """Signal-with-start of the singleton provisioner: atomic, so concurrent callers never race."""
        await self.client.start_workflow(
            ProvisionerWorkflow.run,
            ProvisionerState(),
            id=WORKFLOW_ID,
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            start_signal=SIGNAL,
            start_signal_args=[list(keys)],
        )

    async def signal_node_claim(self, name: str, signal: str, reason: str) -> bool:
        """Signal a claim's workflow; False when it is not running."""
        try:
            await self.client.get_workflow_handle(workflow_id(name)).signal(signal, reason)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return True
