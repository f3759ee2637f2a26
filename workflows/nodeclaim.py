"""The NodeClaim workflow: one per node, alive as long as the node; its history is the node's audit log.

It reads as the lifecycle: launch -> register -> initialize -> running -> drain -> terminate, each phase
a function in workflows.nodeclaim_phases over the run's ClaimRun (the state and what signals asked),
which the signal handlers below set. Each phase is a loop of idempotent activities and durable timers,
so a worker killed at any point resumes where it was, and continue-as-new carries the state to keep
history bounded.

Signals: `delete` (the NodeClaim or its Node is being deleted, or vanished), `node_changed` (the
worker's Node watch saw the claim's Node appear or change while the claim waits for registration or
initialization), `drain`, `expire` and `replace` (manual;
each takes an optional reason string, so `temporal workflow signal --workflow-id nodeclaim-<name> --name
drain` works as is), and `repair` (node repair: terminate without draining, even when a drain is under
way). `replace` is not this workflow's to act on: it forwards the request to the disruption
controller (workflows.disruption), which launches the replacement and, once it is Initialized, signals
`delete` here. A replacement's own workflow is started with that controller as its `waiter`: once the
claim is Initialized (or has ended without being so) it signals the controller `replacement_ready`, so
the old node is drained as soon as its replacement is up. Query: `status` (the NodeClaimState: phase,
instance, node, conditions, waiting_for, termination reason).

An idle node costs nothing: the running phase holds no timer and polls nothing. It waits for a signal:
`delete` (the worker's deletion watcher, and the garbage collector's rounds for a Node or NodeClaim that
vanished), `check_drift` (its NodePool or EC2NodeClass changed, or the leader's claim sweep found its
drift changed, activities.nodeclaim.sweep), `expire` (the claim sweep, once creationTimestamp + expireAfter has
passed, as Karpenter's expiration controller decides it; or manual), or another manual signal. Each
`check_drift` runs one `running_check` activity (liveness and the full drift check); drift only marks
the claim, replacing drifted nodes belongs to the disruption controller. No per-node periodic check
remains: what each one used to catch is someone else's, listed in docs/architecture.md ("What an idle node costs").

Events to reach Running: one activity per phase when nothing has to be waited for (`launch` records the
instance, `register` registers the Node and checks its initialization once); waits are for the Node
watch's `node_changed` signal, with a slow timer as backstop. Search attributes and memo are published
only before a durable wait, at the start of draining and terminating, and at the end; entering Running
they travel with the continue-as-new, which costs no upsert.

Memory per cached workflow: every command of a run (activity, timer, upsert) is held in the worker's
cache for the run's lifetime. So the claim continues as new on entering Running and then every
RUNNING_CHECKS_PER_RUN checks, and a Running run holds no timer (a timer command alone grows the cached
run's command queues; the figures are in benchmarks/README.md). What the run's frames hold is memory per
node too: the phases are plain functions looked up in the module's LIFECYCLE, and what has been published
is read from workflow.info(), not kept.

Runs unsandboxed (the sandbox costs many times a cached workflow's memory, benchmarks/README.md);
determinism is guarded by replay tests over stored histories (docs/architecture.md, "Versioning": how a
change to the command sequence ships).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import workflow

from workflows.disruption import WORKFLOW_ID as DISRUPTION_ID
from workflows.external import signal_workflow
from workflows.messages import DisruptionSignal, NodeClaimSignal, Query
from workflows.nodeclaim_phases.claim import (
    ClaimRun,
    continued_input,
    entered_running,
    history_too_long,
    tell_waiter,
)
from workflows.nodeclaim_phases.fleet_view import continued_view, publish
from workflows.nodeclaim_phases.initialization import initialize
from workflows.nodeclaim_phases.launch import launch
from workflows.nodeclaim_phases.registration import register
from workflows.nodeclaim_phases.running import RUNNING_CHECKS_PER_RUN, running
from workflows.nodeclaim_phases.termination import drain_node, terminate
from workflows.nodeclaim_state import (
    DELETED,
    DRAINING,
    INITIALIZING,
    LAUNCHING,
    REGISTERING,
    RUNNING,
    TERMINATING,
    NodeClaimInput,
    NodeClaimState,
    workflow_id,
)

# The lifecycle, in order: each phase's function, called with the run's ClaimRun; it moves state.phase on.
# Module-level plain functions: a run holds no bound method per phase (a Running run is cached for the
# node's life, and its frames are memory per node).
LIFECYCLE: dict[str, Callable[[ClaimRun], Awaitable[None]]] = {
    LAUNCHING: launch,
    REGISTERING: register,
    INITIALIZING: initialize,
    RUNNING: running,
    DRAINING: drain_node,
    TERMINATING: terminate,
}


@workflow.defn(name="NodeClaim", sandboxed=False)
class NodeClaimWorkflow:
    """One NodeClaim's lifecycle (see the module docstring). Start it with an input from
    workflows.nodeclaim_state.node_claim_input; it returns the final state (phase Deleted)."""

    def __init__(self) -> None:
        self.claim = ClaimRun(state=NodeClaimState(name=""), input=NodeClaimInput(name=""))

    # -- run ---------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, claim_input: NodeClaimInput) -> NodeClaimState:
        """Each phase in turn (LIFECYCLE) until Deleted; tell a waiting workflow once Running or ended;
        continue as new on entering Running, when a phase asks, or when the history grows long."""
        claim = self.claim
        claim.start(claim_input)
        while claim.state.phase != DELETED:
            before = claim.state.phase
            await LIFECYCLE[before](claim)
            if claim.input.waiter and claim.state.phase in (RUNNING, DELETED):
                await tell_waiter(claim)
            if claim.continue_as_new or history_too_long() or entered_running(claim, before):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(continued_input(claim), **continued_view(claim.state))
        publish(claim.state)
        return claim.state

    # -- messages ----------------------------------------------------------------------------------------

    @workflow.signal(name=NodeClaimSignal.DELETE)
    def delete(self, reason: str = "") -> None:
        """The NodeClaim or its Node is being deleted: drain and terminate."""
        self.claim.pending_termination = self.claim.pending_termination or reason or "NodeClaim deleted"

    @workflow.signal(name=NodeClaimSignal.NODE_CHANGED)
    def node_changed(self, reason: str = "") -> None:
        """The worker's Node watch saw this claim's Node appear or change (Ready, taints) while the claim
        was not initialized: look again now rather than at the backstop timer."""
        self.claim.node_seen = True

    @workflow.signal(name=NodeClaimSignal.DRAIN)
    def drain(self, reason: str = "") -> None:
        """Manual drain: cordon and drain the node, then terminate it."""
        self.claim.pending_termination = self.claim.pending_termination or reason or "manual drain"

    @workflow.signal(name=NodeClaimSignal.REPAIR)
    def repair(self, reason: str = "") -> None:
        """Node repair (the NodeRepair feature gate): the Node has been unhealthy too long. Terminate the
        instance without draining (its pods cannot be evicted from a node that does not answer) and
        without waiting for terminationGracePeriod, as Karpenter's repair does; a drain under way stops."""
        self.claim.pending_termination = self.claim.pending_termination or reason or "node repair"
        self.claim.skip_drain = True

    @workflow.signal(name=NodeClaimSignal.EXPIRE)
    def expire(self, reason: str = "") -> None:
        """expireAfter has passed (the leader's claim sweep sends it with the reason `expired after
        <expireAfter>`), or a manual expiration: condition Expired, then drain and terminate."""
        if not self.claim.pending_termination:
            self.claim.state.expired = True
        self.claim.pending_termination = self.claim.pending_termination or reason or "expired (manual)"

    @workflow.signal(name=NodeClaimSignal.REPLACE)
    async def replace(self, reason: str = "") -> None:
        """Manual replace: forwarded to the disruption controller's `replace` signal (this claim's name,
        the reason), which launches a replacement and has this node drained once it is Initialized. A
        claim not running yet, or already being disrupted, is not replaced (the controller records why).
        When no controller runs, the request is dropped with a warning in the worker's log."""
        name = workflow.info().workflow_id.removeprefix(workflow_id(""))
        if not await signal_workflow(DISRUPTION_ID, DisruptionSignal.REPLACE, name, reason or "manual replace"):
            # no controller (not started, or terminated): nothing else could act on it
            workflow.logger.warning("replace of %s not forwarded: the disruption controller is not running", name)

    @workflow.signal(name=NodeClaimSignal.CHECK_DRIFT)
    def check_drift(self, reason: str = "") -> None:
        """Run the running phase's check: the worker sends it when the claim's NodePool or EC2NodeClass
        changes, and when its claim sweep finds the claim's drift changed (activities.nodeclaim.sweep). Asked
        before the running phase (the node class changed while the node launched or initialized), the
        check runs as the running phase begins; the request survives continue-as-new."""
        self.claim.drift_check_requested = True

    @workflow.query(name=Query.STATUS)
    def status(self) -> NodeClaimState:
        """The claim's state: phase, instance, node, conditions, what it waits for, termination reason."""
        return self.claim.state


__all__ = ["LIFECYCLE", "RUNNING_CHECKS_PER_RUN", "NodeClaimWorkflow", "workflow_id"]
