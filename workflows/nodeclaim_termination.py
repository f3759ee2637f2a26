"""The NodeClaim workflow's last two phases: drain (taint the node, evict its pods step by step, force
them after the claim's terminationGracePeriod) and terminate (the instance, then the finalizer). A
mixin of workflows.nodeclaim.NodeClaimWorkflow, which holds the signals and the earlier phases.
Deterministic."""

from __future__ import annotations

from temporalio import workflow

from activities.nodeclaim.models import ClaimIdentity
from activities.nodeclaim.termination import BeginTerminationInput, DrainInput, TerminateInput, TerminationActivities
from apis.duration import parse_duration
from apis.nodeclaim import DRAINED, EXPIRED
from workflows import timing
from workflows.nodeclaim_base import NodeClaimWorkflowBase
from workflows.nodeclaim_state import DELETED, TERMINATING


class NodeClaimTermination(NodeClaimWorkflowBase):
    """The drain and terminate phases."""

    async def drain_node(self) -> None:
        self._publish()
        ref = BeginTerminationInput(**self._identity(), reason=self.pending_termination, expired=self.state.expired)
        await self._run_activity(TerminationActivities.begin_termination, ref)
        self.state.termination_reason = self.pending_termination
        if self.state.expired:
            self.state.conditions[EXPIRED] = "True"
        if self.state.drain_started_at is None:
            self.state.drain_started_at = workflow.now()
            grace = parse_duration(self.input.termination_grace_period) if self.input.termination_grace_period else None
            self.state.drain_deadline = self.state.drain_started_at + grace if grace else None
        while self.state.node_name and not self.skip_drain:
            force = self.state.drain_deadline is not None and workflow.now() >= self.state.drain_deadline
            progress = await workflow.execute_activity_method(
                TerminationActivities.drain_step,
                DrainInput(**self._identity(), force=force, deadline=self.state.drain_deadline),
                start_to_close_timeout=timing.DRAIN_STEP,
                heartbeat_timeout=timing.HEARTBEAT,
                retry_policy=timing.ACTIVITY_RETRY,
            )
            if progress.remaining == 0:
                self.state.conditions[DRAINED] = "True"
                break
            self.state.waiting_for = progress.message
            await self._sleep_until(lambda: self.skip_drain, timing.DRAIN_POLL)
            if self._history_too_long():
                return
        self.state.waiting_for = ""
        self.state.phase = TERMINATING

    async def terminate(self) -> None:
        self._publish()
        if not self.state.termination_reason:
            ref = BeginTerminationInput(
                **self._identity(),
                reason=self.pending_termination,
                expired=self.state.expired,
                registration_failed=self.state.registration_failed,
            )
            await self._run_activity(TerminationActivities.begin_termination, ref)
            self.state.termination_reason = self.pending_termination
        while True:
            result = await self._run_activity(
                TerminationActivities.terminate_instance,
                TerminateInput(**self._ref_fields(), instance_id=self.state.instance_id),
            )
            if result.gone:
                if result.message:
                    self.state.failure = result.message
                break
            self.state.waiting_for = f"instance {self.state.instance_id} to terminate"
            self._publish()
            await workflow.sleep(timing.TERMINATE_POLL)
        await self._run_activity(TerminationActivities.finalize, ClaimIdentity(**self._identity()))
        self.state.waiting_for = ""
        self.state.phase = DELETED
        await self._kick_provisioner()
