"""The provisioner: a singleton workflow (id "provisioner") that batches pending pods into rounds.

A round is asked for by signal (`pods_pending`, carrying only how many pending pods the sender saw; 0
just asks for a round): the solver reads every pending pod itself, so the signal carries nothing else and
a lost or duplicate one is harmless. A round starts once no signal came for 1 s, or 10 s after the first,
whichever is sooner (durable timers). Each round solves on a fresh snapshot in an activity and applies
the plan in another: what a round decided is the `solve` activity's result in the Temporal UI (and the
`status` query's `last_plan`). With tracing on, a round continues the trace of the first signal that
asked for it (workflows.signal_traces). Continue-as-new keeps each run far below Temporal's limits (10,000
signals per execution).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel
from temporalio import workflow

from activities.provisioning.models import ApplyPlanInput, ProvisionPlan, ProvisionRound
from activities.provisioning.provisioner import ProvisioningActivities
from workflows import signal_traces, timing
from workflows.messages import ProvisionerSignal, Query

WORKFLOW_ID = "provisioner"


class BatchWindow(BaseModel):
    """How a provisioning round batches pending pods: it starts once no signal came for `idle_seconds`,
    or `max_seconds` after the window opened (Karpenter's BATCH_IDLE_DURATION and BATCH_MAX_DURATION)."""

    idle_seconds: float = timing.BATCH_IDLE.total_seconds()
    max_seconds: float = timing.BATCH_MAX.total_seconds()


class ProvisionerState(BaseModel):
    """What continue-as-new carries: the round count, a round asked for but not run yet with the pending
    pods its signals reported, and the batch window the last signal that gave one set."""

    round: int = 0
    requested: bool = False
    pending_pods: int = 0
    window: BatchWindow | None = None


class ProvisionerStatus(BaseModel):
    round: int
    pending: int  # pending pods reported by the signals since the last round started
    last_plan: ProvisionPlan | None = None
    last_plan_round: int = 0  # the round last_plan is from (`round` moves on when the next one starts)


@workflow.defn(name="Provisioner", sandboxed=False)
class ProvisionerWorkflow:
    def __init__(self) -> None:
        self.requested = False  # a round is asked for
        self.pending_pods = 0  # what the signals since the last round started reported
        self.round = 0
        self.signals = 0
        self.last_signal: datetime | None = None
        self.last_plan: ProvisionPlan | None = None
        self.last_plan_round = 0
        self.window = BatchWindow()
        self.window_signalled = False  # a signal of this run gave the window

    @workflow.signal(name=ProvisionerSignal.PODS_PENDING)
    def pods_pending(self, count: int = 0, window: BatchWindow | None = None) -> None:
        """Ask for a provisioning round; `count` is how many pending pods the sender saw (0 when it does not
        know or just wants a round, e.g. a NodeClaim gone); `window`, the sender's batch window, which the
        rounds follow from now on (none: keep the one in force). Idempotent."""
        if window is not None:
            self.window, self.window_signalled = window, True
        self.requested = True
        self.pending_pods += max(count, 0)
        self.signals += 1
        self.last_signal = workflow.now()

    @workflow.query(name=Query.STATUS)
    def status(self) -> ProvisionerStatus:
        return ProvisionerStatus(
            round=self.round, pending=self.pending_pods, last_plan=self.last_plan, last_plan_round=self.last_plan_round
        )

    @workflow.run
    async def run(self, state: ProvisionerState | None = None) -> None:
        state = state or ProvisionerState()
        self.round = state.round
        self.requested = self.requested or state.requested
        self.pending_pods += state.pending_pods
        if state.window is not None and not self.window_signalled:  # else a signal gave a newer one
            self.window = state.window
        while True:
            await workflow.wait_condition(lambda: self.requested)
            await self._batch_window()
            triggers, self.pending_pods = self.pending_pods, 0
            self.requested = False
            self.round += 1
            with signal_traces.traced_by(
                ProvisionerSignal.PODS_PENDING
            ):  # the round continues the trace of the signal that asked
                await self._round(triggers)
            if self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                with signal_traces.untraced():  # no trace lasts the provisioner's whole life
                    workflow.continue_as_new(
                        ProvisionerState(
                            round=self.round, requested=self.requested, pending_pods=self.pending_pods,
                            window=self.window,
                        )
                    )  # fmt: skip

    async def _round(self, triggers: int) -> None:
        """Solve on a fresh snapshot, then apply the plan when it holds anything to act on."""
        rnd = ProvisionRound(run_id=workflow.info().first_execution_run_id, round=self.round, trigger_pods=triggers)
        plan = await workflow.execute_activity_method(
            ProvisioningActivities.solve,
            rnd,
            start_to_close_timeout=timing.SOLVE,
            heartbeat_timeout=timing.HEARTBEAT,
            retry_policy=timing.ACTIVITY_RETRY,
        )
        self.last_plan, self.last_plan_round = plan, rnd.round
        if plan.node_claims or plan.invalid or plan.unschedulable:
            await workflow.execute_activity_method(
                ProvisioningActivities.apply_plan,
                ApplyPlanInput(round=rnd, plan=plan),
                start_to_close_timeout=timing.SOLVE,
                heartbeat_timeout=timing.HEARTBEAT,
                retry_policy=timing.ACTIVITY_RETRY,
            )

    async def _batch_window(self) -> None:
        """Wait until the window's idle time (1 s by default) passes without a signal, or its max time (10 s)
        since the window opened."""
        opened = workflow.now()
        idle, longest = timedelta(seconds=self.window.idle_seconds), timedelta(seconds=self.window.max_seconds)
        while True:
            now = workflow.now()
            last = self.last_signal or opened
            remaining = min(last + idle - now, opened + longest - now)
            if remaining.total_seconds() <= 0:
                return
            seen = self.signals
            try:
                await workflow.wait_condition(lambda seen=seen: self.signals != seen, timeout=remaining)  # type: ignore[misc]
            except TimeoutError:
                return

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        return (
            self.signals >= timing.MAX_SIGNALS_PER_RUN
            or info.get_current_history_length() > timing.MAX_HISTORY_EVENTS
            or info.is_continue_as_new_suggested()
        )
