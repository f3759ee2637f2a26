"""Start-up reconciliation between NodeClaims and their workflows, both ways.

- `adopt_node_claims`: every NodeClaim gets a running workflow (a lost Temporal namespace or a restored
  cluster converges).
- `end_orphaned_workflows`: every running NodeClaim workflow whose NodeClaim no longer exists is ended
  now, not at its next timer (a workflow that outlived its claim must not wait minutes, holding a name
  that a new node may get). With no instance tagged for the claim it is terminated with a reason the
  Temporal UI shows; with one, it is signalled `delete`, so it terminates that instance (its activities
  check the tag and never touch a Node or NodeClaim that is not its own) and ends.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from cloudprovider.types import CloudProvider
from kube import resources as r
from kube.types import Kube
from workers.temporal.starter import TemporalStarter
from workflows.messages import NodeClaimSignal
from workflows.nodeclaim import workflow_id

log = logging.getLogger(__name__)
RUNNING_NODE_CLAIMS = 'WorkflowType="NodeClaim" AND ExecutionStatus="Running"'
ORPHAN_REASON = "the NodeClaim {name} no longer exists (found when the worker started)"


async def adopt_node_claims(kube: Kube, starter: TemporalStarter) -> int:
    """Start a workflow for every NodeClaim that has none running (USE_EXISTING leaves running ones alone),
    recording the claim's uid. Returns how many claims were seen."""
    claims = await asyncio.to_thread(kube.list, r.NODECLAIM)
    for claim in claims:
        await starter.start_node_claim_async(starter.claim_input(claim))
    return len(claims)


@dataclass
class OrphanReport:
    """Names of the claims whose workflows were ended: `terminated` (nothing of theirs left) and
    `signalled` (an instance tagged for them remains, which the workflow terminates)."""

    terminated: list[str] = field(default_factory=list)
    signalled: list[str] = field(default_factory=list)


async def end_orphaned_workflows(client: Client, kube: Kube, cloud: CloudProvider) -> OrphanReport:
    """End the running NodeClaim workflows whose NodeClaim does not exist. Workflows are listed before
    NodeClaims: a claim is created before its workflow starts, so a workflow listed here whose claim is
    missing from the later list had a claim that is gone."""
    names = [
        execution.id.removeprefix(workflow_id(""))
        async for execution in client.list_workflows(RUNNING_NODE_CLAIMS)
        if execution.id.startswith(workflow_id(""))
    ]
    existing = {c["metadata"]["name"] for c in await asyncio.to_thread(kube.list, r.NODECLAIM)}
    report = OrphanReport()
    for name in sorted(set(names) - existing):
        reason = ORPHAN_REASON.format(name=name)
        handle = client.get_workflow_handle(workflow_id(name))
        try:
            if await asyncio.to_thread(cloud.find_by_node_claim, name) is None:
                await handle.terminate(reason=f"{reason}, and no instance is tagged for it")
                report.terminated.append(name)
            else:
                await handle.signal(NodeClaimSignal.DELETE, f"{reason}; terminating its instance")
                report.signalled.append(name)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:  # ended meanwhile: nothing to do
                raise
    if report.terminated or report.signalled:
        log.info(
            "ended %d NodeClaim workflows without a NodeClaim (%s); signalled %d with an instance left (%s)",
            len(report.terminated),
            ", ".join(report.terminated),
            len(report.signalled),
            ", ".join(report.signalled),
        )
    return report
