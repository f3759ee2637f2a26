"""The NodeClaim workflow: one per node, alive as long as the node; its history is the node's audit log.

It reads as the lifecycle, one method per phase: launch -> register -> initialize -> run -> drain ->
terminate (the last two in workflows.nodeclaim_termination). Each phase is a loop of idempotent
activities and durable timers, so a worker killed at any point resumes where it was, and continue-as-new
carries the state to keep history bounded.

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
node too: the phases are looked up in the module's PHASES, and what has been published is read from
workflow.info(), not kept.

Runs unsandboxed (the sandbox costs many times a cached workflow's memory, benchmarks/README.md);
determinism is guarded by replay tests over stored histories (docs/architecture.md, "Versioning": how a
change to the command sequence ships).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

from activities.nodeclaim.initialization import InitializationActivities
from activities.nodeclaim.launch import LaunchActivities, LaunchFailedInput
from activities.nodeclaim.models import ClaimIdentity
from activities.nodeclaim.registration import FindNodeInput, RegistrationActivities
from activities.nodeclaim.running import DriftCheckInput, RunningActivities
from apis.duration import parse_duration
from apis.nodeclaim import INITIALIZED, LAUNCH_FAILED, LAUNCHED, REGISTERED
from workflows import timing
from workflows.disruption import WORKFLOW_ID as DISRUPTION_ID
from workflows.external import signal_workflow
from workflows.messages import DisruptionSignal, NodeClaimSignal, Query
from workflows.nodeclaim_base import workflow_id
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
)
from workflows.nodeclaim_termination import NodeClaimTermination

# A running run continues as new after this many running checks, so the commands a cached run holds stay
# few: the worker's memory per node does not grow with the node's age.
RUNNING_CHECKS_PER_RUN = 2


@workflow.defn(name="NodeClaim", sandboxed=False)
class NodeClaimWorkflow(NodeClaimTermination):
    """One NodeClaim's lifecycle (see the module docstring). Start it with an input from
    workflows.nodeclaim_state.node_claim_input; it returns the final state (phase Deleted)."""

    # -- messages ----------------------------------------------------------------------------------------

    @workflow.signal(name=NodeClaimSignal.DELETE)
    def delete(self, reason: str = "") -> None:
        """The NodeClaim or its Node is being deleted: drain and terminate."""
        self.pending_termination = self.pending_termination or reason or "NodeClaim deleted"

    @workflow.signal(name=NodeClaimSignal.NODE_CHANGED)
    def node_changed(self, reason: str = "") -> None:
        """The worker's Node watch saw this claim's Node appear or change (Ready, taints) while the claim
        was not initialized: look again now rather than at the backstop timer."""
        self.node_seen = True

    @workflow.signal(name=NodeClaimSignal.DRAIN)
    def drain(self, reason: str = "") -> None:
        """Manual drain: cordon and drain the node, then terminate it."""
        self.pending_termination = self.pending_termination or reason or "manual drain"

    @workflow.signal(name=NodeClaimSignal.REPAIR)
    def repair(self, reason: str = "") -> None:
        """Node repair (the NodeRepair feature gate): the Node has been unhealthy too long. Terminate the
        instance without draining (its pods cannot be evicted from a node that does not answer) and
        without waiting for terminationGracePeriod, as Karpenter's repair does; a drain under way stops."""
        self.pending_termination = self.pending_termination or reason or "node repair"
        self.skip_drain = True

    @workflow.signal(name=NodeClaimSignal.EXPIRE)
    def expire(self, reason: str = "") -> None:
        """expireAfter has passed (the leader's claim sweep sends it with the reason `expired after
        <expireAfter>`), or a manual expiration: condition Expired, then drain and terminate."""
        if not self.pending_termination:
            self.state.expired = True
        self.pending_termination = self.pending_termination or reason or "expired (manual)"

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
        before the running phase (the node class changed
        while the node launched or initialized), the check runs as the running phase begins; the request
        survives continue-as-new."""
        self.drift_check_requested = True

    @workflow.query(name=Query.STATUS)
    def status(self) -> NodeClaimState:
        """The claim's state: phase, instance, node, conditions, what it waits for, termination reason."""
        return self.state

    # -- run ---------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, claim_input: NodeClaimInput) -> NodeClaimState:
        self.input = claim_input
        self.state = claim_input.state or NodeClaimState(name=claim_input.name, node_pool=claim_input.node_pool)
        self.pending_termination = self.pending_termination or claim_input.pending_termination
        self.drift_check_requested = self.drift_check_requested or claim_input.drift_check_requested
        self.skip_drain = self.skip_drain or claim_input.skip_drain
        while self.state.phase != DELETED:
            before = self.state.phase
            await PHASES[before](self)
            if self.input.waiter and self.state.phase in (RUNNING, DELETED):
                await self._tell_waiter()
            if self._continue or self._history_too_long() or self._entered_running(before):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self._continued_input(), **self._continued_view())
        self._publish()
        return self.state

    async def launch(self) -> None:
        try:
            outcome = await workflow.execute_activity_method(
                LaunchActivities.launch,
                self._ref(),
                start_to_close_timeout=timing.LAUNCH_ATTEMPT,
                schedule_to_close_timeout=timing.LAUNCH_TIMEOUT,
                heartbeat_timeout=timing.HEARTBEAT,
                retry_policy=timing.LAUNCH_RETRY,
            )
        except ActivityError as err:
            cause = err.cause
            await self._launch_failed(LAUNCH_FAILED, str(cause or err))
            return
        if outcome.failure:
            await self._launch_failed(outcome.failure, outcome.message)
            return
        self.state.instance_id = outcome.instance_id
        self.state.instance_type = outcome.instance_type
        self.state.zone = outcome.zone
        self.state.capacity_type = outcome.capacity_type
        self.state.provider_id = outcome.provider_id
        self.state.node_pool = outcome.node_pool or self.state.node_pool
        if outcome.claim_deleting:
            self.pending_termination = self.pending_termination or "NodeClaim deleted while launching"
        self.state.conditions[LAUNCHED] = "True"
        now = workflow.now()
        self.state.launched_at = now
        self.state.registration_deadline = now + (parse_duration(self.input.registration_ttl) or timedelta(minutes=15))
        self.state.phase = TERMINATING if self.pending_termination else REGISTERING

    async def _launch_failed(self, failure: str, message: str) -> None:
        self.state.failure = f"{failure}: {message}"
        await self._run_activity(
            LaunchActivities.launch_failed,
            LaunchFailedInput(**self._ref_fields(), failure=failure, message=message),
        )
        await self._kick_provisioner()
        self.state.phase = DELETED

    async def register(self) -> None:
        interval = timing.NODE_WAIT_FIRST
        while True:
            self.node_seen = False  # a signal from now on means the Node changed after this look
            found = await self._run_activity(
                RegistrationActivities.register,
                FindNodeInput(**self._ref_fields(), provider_id=self.state.provider_id),
            )
            if found.claim_gone:
                self.pending_termination = self.pending_termination or self._claim_gone()
                self.state.phase = TERMINATING
                return
            if found.node_name:
                self.state.node_name, self.state.node_uid = found.node_name, found.node_uid
                self.state.conditions[REGISTERED] = "True"
                self._initialization = found.initialization
                self.state.phase = DRAINING if self.pending_termination else INITIALIZING
                return
            if self.pending_termination:
                self.state.phase = TERMINATING
                return
            deadline = self.state.registration_deadline
            if deadline is not None and workflow.now() >= deadline:
                self.pending_termination = f"the node did not register within {self.input.registration_ttl}"
                self.state.registration_failed = True
                self.state.phase = TERMINATING
                return
            self.state.waiting_for = "the Node with this instance's providerID"
            wait = min(interval, deadline - workflow.now()) if deadline is not None else interval
            await self._sleep_until(lambda: bool(self.pending_termination or self.node_seen), wait)
            interval = min(interval * 2, timing.NODE_WAIT_MAX)

    async def initialize(self) -> None:
        interval = timing.NODE_WAIT_FIRST
        result, self._initialization = self._initialization, None  # `register` checked once already
        while not self.pending_termination:
            if result is None:
                self.node_seen = False
                result = await self._run_activity(
                    InitializationActivities.check_initialized, ClaimIdentity(**self._identity())
                )
            if result.gone:
                self.pending_termination = self.pending_termination or result.waiting_for
                break
            if result.initialized:
                self.state.conditions[INITIALIZED] = "True"
                self.state.waiting_for = ""
                self.state.phase = RUNNING
                return
            self.state.waiting_for = result.waiting_for
            await self._sleep_until(lambda: bool(self.pending_termination or self.node_seen), interval)
            interval = min(interval * 2, timing.NODE_WAIT_MAX)
            result = None
        self.state.phase = DRAINING

    async def running(self) -> None:
        """Wait, with no timer, for a signal: a termination (`delete`, `expire`, `drain`, `repair`) drains
        the node; `check_drift` runs one running check. The run continues as new every
        RUNNING_CHECKS_PER_RUN checks."""
        checks = 0
        while not self.pending_termination:
            await self._sleep_until(self._running_wake, None)
            if self.pending_termination:
                break
            self.drift_check_requested = False
            if not await self._running_check():
                self.pending_termination = "the NodeClaim or its Node was deleted"
                break
            checks += 1
            if checks >= RUNNING_CHECKS_PER_RUN:
                self._continue = True
                return
            if self._history_too_long():
                return
        self.state.phase = DRAINING

    def _running_wake(self) -> bool:
        """What ends the running phase's wait (a method: a lambda would be one more object per cached run)."""
        return bool(self.pending_termination or self.drift_check_requested)

    async def _running_check(self) -> bool:
        """One liveness and drift check (one activity); False when the claim or its node is going away."""
        check = await self._run_activity(
            RunningActivities.running_check, DriftCheckInput(**self._identity(), instance_id=self.state.instance_id)
        )
        if check.gone:
            return False
        self._record_drift(check.drift)
        return True


# Each phase's method, called with the workflow. Module-level so that a run holds no bound method per phase:
# a Running run is cached for the node's life, and its frames are memory per node.
PHASES: dict[str, Callable[[NodeClaimWorkflow], Awaitable[None]]] = {
    LAUNCHING: NodeClaimWorkflow.launch,
    REGISTERING: NodeClaimWorkflow.register,
    INITIALIZING: NodeClaimWorkflow.initialize,
    RUNNING: NodeClaimWorkflow.running,
    DRAINING: NodeClaimWorkflow.drain_node,
    TERMINATING: NodeClaimWorkflow.terminate,
}

__all__ = ["NodeClaimWorkflow", "workflow_id"]
