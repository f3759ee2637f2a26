"""The provisioner: a singleton workflow (id "provisioner") that batches pending pods into rounds.

Pod keys arrive by signal (`pods_pending`, many keys per signal; an empty list just asks for a round).
A round starts once no signal came for 1 s, or 10 s after the first key, whichever is sooner (durable
timers). Each round solves on a fresh snapshot in an activity and applies the plan in another. The
keys are only triggers: the solver reads every pending pod itself, so a lost or duplicate key is
harmless. Continue-as-new keeps each run far below Temporal's limits (10,000 signals per execution).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field
from temporalio import workflow

from activities.models import ApplyPlanInput, ProvisionPlan, ProvisionRound
from activities.provisioning import ProvisioningActivities
from workflows import timing

WORKFLOW_ID = "provisioner"
SIGNAL = "pods_pending"


class ProvisionerState(BaseModel):
    pending: list[str] = Field(default_factory=list)
    round: int = 0
    kick: bool = False


class ProvisionerStatus(BaseModel):
    round: int
    pending: int
    last_plan: ProvisionPlan | None = None


@workflow.defn(name="Provisioner", sandboxed=False)
class ProvisionerWorkflow:
    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.kick = False
        self.round = 0
        self.signals = 0
        self.last_signal: datetime | None = None
        self.last_plan: ProvisionPlan | None = None

    @workflow.signal(name=SIGNAL)
    def pods_pending(self, keys: list[str]) -> None:
        """Pods that may need capacity (namespace/name). Idempotent; an empty list requests a round."""
        self.pending.update(keys)
        self.kick = self.kick or not keys
        self.signals += 1
        self.last_signal = workflow.now()

    @workflow.query(name="status")
    def status(self) -> ProvisionerStatus:
        return ProvisionerStatus(round=self.round, pending=len(self.pending), last_plan=self.last_plan)

    @workflow.run
    async def run(self, state: ProvisionerState | None = None) -> None:
        state = state or ProvisionerState()
        self.pending.update(state.pending)
        self.round = state.round
        self.kick = self.kick or state.kick
        while True:
            await workflow.wait_condition(lambda: bool(self.pending) or self.kick)
            await self._batch_window()
            triggers = len(self.pending)
            self.pending.clear()
            self.kick = False
            self.round += 1
            rnd = ProvisionRound(run_id=workflow.info().first_execution_run_id, round=self.round, trigger_pods=triggers)
            plan = await workflow.execute_activity_method(
                ProvisioningActivities.solve,
                rnd,
                start_to_close_timeout=timing.SOLVE,
                heartbeat_timeout=timing.HEARTBEAT,
                retry_policy=timing.ACTIVITY_RETRY,
            )
            self.last_plan = plan
            if plan.node_claims or plan.invalid or plan.unschedulable:
                await workflow.execute_activity_method(
                    ProvisioningActivities.apply_plan,
                    ApplyPlanInput(round=rnd, plan=plan),
                    start_to_close_timeout=timing.SOLVE,
                    heartbeat_timeout=timing.HEARTBEAT,
                    retry_policy=timing.ACTIVITY_RETRY,
                )
            if self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    ProvisionerState(pending=sorted(self.pending), round=self.round, kick=self.kick)
                )

    async def _batch_window(self) -> None:
        """Wait until 1 s passes without a signal, or 10 s since the window opened."""
        opened = workflow.now()
        while True:
            now = workflow.now()
            last = self.last_signal or opened
            remaining = min(last + timing.BATCH_IDLE - now, opened + timing.BATCH_MAX - now)
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
