"""The disruption controller: a singleton workflow (id "disruption") that removes nodes Karpenter would.

Every POLL (Karpenter: 10 s) it runs `decide_disruption` on a fresh snapshot. A command is validated as
Karpenter does: wait VALIDATION (15 s, a durable timer), decide again on fresh state, and act only if the
same command (same method, action and candidates) comes out; anything that changed in between (a pod
arrived, a do-not-disrupt pod landed, a PDB or budget closed) abandons it. Acting is `start_disruption`
(taint the candidates `karpenter.sh/disrupted:NoSchedule`, condition `DisruptionReason`, event), then a
`delete` signal to each candidate's NodeClaim workflow, which drains (PDBs respected) and terminates.

Only the methods in `DisruptionSettings.executable_methods` act (Emptiness by default: delete commands of
empty nodes need no replacement). Commands of the other methods are decided and recorded in history
without acting, until replacements are launched by this controller.

Every decision, taken or abandoned, is an activity result in history; the memo holds the last one and the
`status` query the recent ones. Continue-as-new every ROUNDS_PER_RUN rounds keeps history bounded.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy, WorkflowIDConflictPolicy
from temporalio.exceptions import ActivityError

from activities.disruption import DecideInput, DisruptionActivities, DisruptionRound, StartInput
from workflows.nodeclaim import workflow_id as node_claim_workflow_id

WORKFLOW_ID = "disruption"
POLL = timedelta(seconds=10)
VALIDATION = timedelta(seconds=15)
ROUNDS_PER_RUN = 60
RECENT_LIMIT = 10
DECIDE_TIMEOUT = timedelta(minutes=2)
DECIDE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10), maximum_attempts=3
)


class DisruptionSettings(BaseModel):
    executable_methods: list[str] = Field(default_factory=lambda: ["Emptiness"])
    spot_to_spot_consolidation: bool = False


class DisruptionState(BaseModel):
    """The input and carried state: settings, rounds so far, the recent decisions (newest last)."""

    settings: DisruptionSettings = Field(default_factory=DisruptionSettings)
    rounds: int = 0
    recent: list[str] = Field(default_factory=list)
    single_node_first: list[str] = Field(default_factory=list)


@workflow.defn(name="DisruptionController", sandboxed=False)
class DisruptionControllerWorkflow:
    def __init__(self) -> None:
        self.state = DisruptionState()

    @workflow.query(name="status")
    def status(self) -> DisruptionState:
        return self.state

    @workflow.run
    async def run(self, state: DisruptionState) -> None:
        self.state = state
        for _ in range(ROUNDS_PER_RUN):
            await self._round()
            self.state.rounds += 1
            if workflow.info().is_continue_as_new_suggested():
                break
            await workflow.sleep(POLL)
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(self.state)

    async def _decide(self) -> DisruptionRound | None:
        settings = self.state.settings
        try:
            return await workflow.execute_activity_method(
                DisruptionActivities.decide_disruption,
                DecideInput(
                    executable_methods=settings.executable_methods,
                    spot_to_spot_consolidation=settings.spot_to_spot_consolidation,
                    single_node_first=self.state.single_node_first,
                ),
                start_to_close_timeout=DECIDE_TIMEOUT,
                heartbeat_timeout=timedelta(seconds=30),
                retry_policy=DECIDE_RETRY,
            )
        except ActivityError as err:
            self._record(f"decision failed: {err.cause or err}")
            return None

    async def _round(self) -> None:
        decided = await self._decide()
        if decided is None:
            return
        self.state.single_node_first = decided.single_node_skipped
        if decided.command is None or not decided.executable:
            self._record(decided.summary())
            return
        await workflow.sleep(VALIDATION)
        again = await self._decide()
        if again is None or not _same_command(decided, again):
            now = again.summary() if again else "no decision"
            self._record(f"abandoned after validation: {decided.summary()} -> now {now}")
            return
        assert again.command is not None
        marked = await workflow.execute_activity_method(
            DisruptionActivities.start_disruption,
            StartInput(command=again.command),
            start_to_close_timeout=timedelta(minutes=1),
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=10)),
        )
        reason = f"disrupted: {again.command.reason} ({again.command.method})"
        for name in marked:
            try:
                await workflow.get_external_workflow_handle(node_claim_workflow_id(name)).signal("delete", reason)
            except Exception:  # its workflow ended meanwhile: its node is going or gone
                workflow.logger.info("nodeclaim-%s not signalled", name)
        self._record(f"{again.summary()}; signalled {', '.join(marked) or 'none'}")

    def _record(self, line: str) -> None:
        if self.state.recent and self.state.recent[-1] == line:
            return  # the same as last round: already in the memo, and in history as the activity result
        self.state.recent = [*self.state.recent, line][-RECENT_LIMIT:]
        workflow.upsert_memo({"last": line})


def _same_command(first: DisruptionRound, second: DisruptionRound) -> bool:
    a, b = first.command, second.command
    return (
        a is not None
        and b is not None
        and second.executable
        and (a.method, a.action) == (b.method, b.action)
        and first.candidate_names() == second.candidate_names()
    )


async def start_disruption_controller(client: Client, task_queue: str, settings: DisruptionSettings) -> None:
    """Start the singleton, or leave the running one alone."""
    await client.start_workflow(
        DisruptionControllerWorkflow.run,
        DisruptionState(settings=settings),
        id=WORKFLOW_ID,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
