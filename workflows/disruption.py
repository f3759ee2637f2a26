"""The disruption controller: a singleton workflow (id "disruption") that removes and replaces nodes as
Karpenter does.

Each round runs `decide_disruption` on a fresh snapshot. A command is validated as
Karpenter does: wait VALIDATION (15 s, a durable timer), decide again on fresh state, and act only if the
same command (same method, action and candidates: activities.disruption.decision.confirms) comes out; anything
that changed in between (a pod arrived, a do-not-disrupt pod landed, a PDB or budget closed) abandons it,
and the validating decision counts it as a failed validation. Acting, each step an activity
(activities.disruption.execution):

1. `start_disruption`: taint the candidates `karpenter.sh/disrupted:NoSchedule`, condition
   `DisruptionReason`, event;
2. for a Replace: `launch_replacements` (NodeClaims and their workflows, as provisioning launches them),
   then `replacements_state` until every replacement is Initialized; a replacement that fails (its claim
   is deleted) or is not up within REPLACEMENT_TIMEOUT aborts the command (`abort_disruption`: untaint,
   delete the replacements), so pods are never left without a place. Each replacement's NodeClaim
   workflow signals `replacement_ready` once it is Initialized (or has ended without being so), and the
   controller looks again at once; a poll with backoff (REPLACEMENT_POLL_FIRST to REPLACEMENT_POLL_MAX)
   is the backstop. Karpenter requeues its check with backoff up to 10 s; a node that takes a minute to
   initialize is acted on when it is, not up to a poll later;
3. `signal_disruption`: a `delete` signal to each candidate's NodeClaim workflow, all at once, which
   drains (PDBs respected) and terminates.

A worker killed at any line resumes the command where it was: the taint ends in the abort path or the
drain, never left; replacement names derive from the run and round, so a retried launch finds them. A
controller terminated by hand mid-command, or Karpenter uninstalled mid-command, does leave marks: each
decision first clears the marks nothing acts on, as Karpenter's controller does (activities.disruption.stale_marks),
but those of the NodeClaims signalled to delete in the last HANDOVER (`handed_over`).

Manual replaces: the `replace` signal (NodeClaim name, reason; sent by `nodeflow replace` and forwarded by
a NodeClaim workflow's own `replace` signal) queues a request, deduplicated by name, which wakes the poll.
Queued requests run at the start of the next round, before its decision, one command each of method
`Manual` (activities.disruption.manual_replacement): the same steps as above, the replacement being a copy of the
original on its NodePool's template as it is now. They bypass budgets, consolidation policy and
`executable_methods`; a claim gone, without a Node yet, or already being disrupted is skipped, recorded.

Only the methods in `DisruptionSettings.executable_methods` act (the worker setting `disruption_methods`,
by default all of them; each starting worker signals `configure`). Commands of the other methods are decided
and recorded in history without acting.

When rounds come: after a round that acted or must look again (a command executed, abandoned or rolled
back; a manual replace; a failed decision) the next comes after POLL (Karpenter's polling period, 10 s).
After a quiet round (no command, or a command of a method not executed) the controller waits for news
instead: the `wake` signal, a manual replace, or IDLE_BACKSTOP should a wake be lost. The leader sends
`wake` (activities.disruption.trigger): it decides every POLL itself, outside any workflow, decides again at
least every 5 minutes (Karpenter's interval) whatever it remembers, wakes the controller when that
decision is news and retries a wake that failed at its next look. So a change is acted on as soon as with
a 10 s poll, and an idle cluster's controller costs a timer and an activity per IDLE_BACKSTOP, not per
10 s. The backstop is hourly, as nodeflow's other safety checks: it only covers a leader whose look
ahead keeps failing, or no leader at all.

Every decision, taken or abandoned, is an activity result in history; the memo holds the last one and the
`status` query the recent ones. Continue-as-new every ROUNDS_PER_RUN rounds keeps history bounded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar, overload

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy, WorkflowIDConflictPolicy
from temporalio.exceptions import ActivityError

from activities.disruption.decision import DecideInput, DisruptionActivities, DisruptionRound, confirms
from activities.disruption.execution import (
    AbortInput,
    DisruptionExecution,
    LaunchReplacementsInput,
    SignalInput,
    StartInput,
)
from activities.disruption.manual_replacement import MANUAL, LaunchManualInput, ManualReplacement, ManualRequest
from activities.provisioning.models import ProvisionRound
from scheduling.disruption import Command, stale
from scheduling.disruption.model import METHOD_ORDER
from workflows import timing
from workflows.messages import DisruptionSignal, Query

WORKFLOW_ID = "disruption"
POLL = timedelta(seconds=10)
IDLE_BACKSTOP = timedelta(hours=1)
VALIDATION = timedelta(seconds=15)
ROUNDS_PER_RUN = 60
RECENT_LIMIT = 10
DECIDE_TIMEOUT = timedelta(minutes=2)
DECIDE_RETRY = RetryPolicy(maximum_interval=timedelta(seconds=10), maximum_attempts=3)
STEP_TIMEOUT = timing.SHORT_ACTIVITY  # each step is a few API calls; a killed worker is noticed after this
STEP_RETRY = RetryPolicy(maximum_interval=timedelta(seconds=10))
REPLACEMENT_POLL_FIRST = timedelta(seconds=2)
REPLACEMENT_POLL_MAX = timedelta(seconds=15)
REPLACEMENT_TIMEOUT = timedelta(minutes=15)
HANDOVER = stale.RECENT

_Arg = TypeVar("_Arg")
_Result = TypeVar("_Result")


class DisruptionSettings(BaseModel):
    executable_methods: list[str] = Field(default_factory=lambda: list[str](METHOD_ORDER))
    spot_to_spot_consolidation: bool = False


class DisruptionState(BaseModel):
    """The input and carried state: settings, rounds so far, the recent decisions (newest last), the
    manual replaces queued and not yet acted on."""

    settings: DisruptionSettings = Field(default_factory=DisruptionSettings)
    rounds: int = 0
    recent: list[str] = Field(default_factory=list)
    single_node_first: list[str] = Field(default_factory=list)
    manual: list[ManualRequest] = Field(default_factory=list)
    handed_over: dict[str, datetime] = Field(default_factory=dict)  # NodeClaim -> when signalled to delete


@workflow.defn(name="DisruptionController", sandboxed=False)
class DisruptionControllerWorkflow:
    def __init__(self) -> None:
        self.state = DisruptionState()
        self._configured: DisruptionSettings | None = None  # from `configure` before run() (signal-with-start)
        self._replacing = ""  # the NodeClaim whose manual replace runs now
        self._woken = False  # a `wake` came since the current round began
        self._replacement_news = False  # a `replacement_ready` came since the last look at the replacements

    @workflow.signal(name=DisruptionSignal.CONFIGURE)
    def configure(self, settings: DisruptionSettings) -> None:
        """New settings from a starting worker; they apply from the next decision."""
        self.state.settings = self._configured = settings

    @workflow.signal(name=DisruptionSignal.REPLACE)
    def replace(self, node_claim: str, reason: str = "") -> None:
        """Queue a manual replace of the NodeClaim `node_claim` (a request for a name already queued, or
        whose replace is running now, is dropped); it runs before the next decision (see the module
        docstring)."""
        if node_claim == self._replacing:
            return
        self.state.manual = _queued(self.state.manual, [ManualRequest(node_claim=node_claim, reason=reason)])

    @workflow.signal(name=DisruptionSignal.WAKE)
    def wake(self) -> None:
        """News (activities.disruption.trigger): a quiet controller runs a round now instead of at its backstop."""
        self._woken = True

    @workflow.signal(name=DisruptionSignal.REPLACEMENT_READY)
    def replacement_ready(self, node_claim: str = "") -> None:
        """A replacement's NodeClaim workflow: the claim `node_claim` is Initialized, or ended without being
        so. A command waiting for its replacements looks again now rather than at its next poll."""
        self._replacement_news = True

    @workflow.query(name=Query.STATUS)
    def status(self) -> DisruptionState:
        return self.state

    @workflow.run
    async def run(self, state: DisruptionState) -> None:
        queued = self.state.manual  # signalled before run() (signal-with-start)
        self.state = state
        self.state.manual = _queued(state.manual, queued)
        if self._configured is not None:
            self.state.settings = self._configured
        for _ in range(ROUNDS_PER_RUN):
            self._woken = False
            busy = await self._round()
            self.state.rounds += 1
            if workflow.info().is_continue_as_new_suggested():
                break
            if busy:
                await self._sleep_unless(lambda: bool(self.state.manual), POLL)
            else:
                await self._sleep_unless(lambda: bool(self.state.manual) or self._woken, IDLE_BACKSTOP)
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(self.state)

    async def _decide(self, validating: Command | None = None) -> DisruptionRound | None:
        """A decision on a fresh snapshot (`validating`: the command it validates); None when it failed."""
        settings = self.state.settings
        try:
            return await workflow.execute_activity_method(
                DisruptionActivities.decide_disruption,
                DecideInput(
                    executable_methods=settings.executable_methods,
                    spot_to_spot_consolidation=settings.spot_to_spot_consolidation,
                    single_node_first=self.state.single_node_first,
                    validating=validating,
                    handed_over=self._handed_over(),
                ),
                start_to_close_timeout=DECIDE_TIMEOUT,
                heartbeat_timeout=timing.HEARTBEAT,
                retry_policy=DECIDE_RETRY,
            )
        except ActivityError as err:
            self._record(f"decision failed: {err.cause or err}")
            return None

    def _handed_over(self) -> list[str]:
        """The NodeClaims signalled to delete within HANDOVER (older entries are dropped): their
        `karpenter.sh/disrupted` taints are in use while their workflows begin their termination, and the
        decision's clearing of stale taints (activities.disruption.stale_marks) leaves them."""
        since = workflow.now() - HANDOVER
        self.state.handed_over = {name: at for name, at in self.state.handed_over.items() if at > since}
        return sorted(self.state.handed_over)

    @staticmethod
    async def _sleep_unless(news: Callable[[], bool], duration: timedelta) -> None:
        """A durable timer that `news()` becoming true cuts short."""
        try:
            await workflow.wait_condition(news, timeout=duration)
        except TimeoutError:
            pass

    async def _manual_replaces(self) -> bool:
        """Run the queued manual replaces, oldest first, each as its own `Manual` command; whether any was
        queued."""
        queued = bool(self.state.manual)
        while self.state.manual:
            request = self.state.manual.pop(0)
            self._replacing = request.node_claim
            try:
                plan = await self._step(ManualReplacement.plan_manual_replacement, request)
                if plan.command is None:
                    self._record(f"manual replace of {request.node_claim} skipped: {plan.skipped}")
                    continue
                await self._execute(DisruptionRound(command=plan.command, executable=True), plan.command)
            finally:
                self._replacing = ""
        return queued

    async def _round(self) -> bool:
        """One round (see the module docstring); False when it was quiet: no manual replace, and a decision
        without an executable command."""
        manual = await self._manual_replaces()
        decided = await self._decide()
        if decided is None:
            return True
        self.state.single_node_first = decided.single_node_skipped
        command = decided.command
        if command is None or not decided.executable:
            self._record(decided.summary())
            return manual
        await workflow.sleep(VALIDATION)
        again = await self._decide(validating=command)
        if again is None or again.command is None or not confirms(command, again):
            now = again.summary() if again else "no decision"
            self._record(f"abandoned after validation: {decided.summary()} -> now {now}")
            return True
        await self._execute(again, again.command)
        return True

    async def _execute(self, decided: DisruptionRound, command: Command) -> None:
        marked = await self._step(DisruptionExecution.start_disruption, StartInput(command=command))
        replacements: list[str] = []
        if command.action == "Replace" and marked:
            info = workflow.info()
            round_ = ProvisionRound(run_id=f"{info.workflow_id}-{info.run_id}", round=self.state.rounds)
            waiter = info.workflow_id
            if command.method == MANUAL:
                manual = LaunchManualInput(round=round_, names=marked, waiter=waiter)
                replacements = await self._step(ManualReplacement.launch_manual_replacements, manual)
                wanted = len(marked)
            else:
                launch = LaunchReplacementsInput(
                    round=round_, replacements=command.replacements, reason=command.reason, waiter=waiter
                )
                replacements = await self._step(DisruptionExecution.launch_replacements, launch)
                wanted = len(command.replacements)
            failure = await self._wait_for_replacements(replacements, wanted)
            if failure:
                abort = AbortInput(command=command, replacements=replacements, reason=failure)
                await self._step(DisruptionExecution.abort_disruption, abort)
                self._record(f"rolled back: {decided.summary()}: {failure}")
                return
        signalled: list[str] = []
        if marked:
            why = f"disrupted: {command.reason} ({command.method})"
            if command.method == MANUAL:
                why = f"replaced by {', '.join(replacements)} ({command.message})"
            delete = SignalInput(names=marked, reason=why)
            signalled = await self._step(DisruptionExecution.signal_disruption, delete)
            self.state.handed_over |= dict.fromkeys(signalled, workflow.now())
        launched = f"; replacements {', '.join(replacements)} initialized" if replacements else ""
        self._record(f"{decided.summary()}{launched}; signalled {', '.join(signalled) or 'none'}")

    async def _wait_for_replacements(self, names: list[str], wanted: int) -> str:
        """'' once every replacement is Initialized; else why the command must be rolled back. Looks after
        each `replacement_ready`, and at the backstop poll."""
        if len(names) < wanted:
            return f"only {len(names)} of {wanted} replacements could be created (a NodePool or original is gone)"
        deadline = workflow.now() + REPLACEMENT_TIMEOUT
        interval = REPLACEMENT_POLL_FIRST
        while True:
            self._replacement_news = False  # a signal from now on is news after this look
            state = await self._step(DisruptionExecution.replacements_state, names)
            if state.gone:
                return f"replacement {', '.join(state.gone)} failed to launch"
            if not state.waiting:
                return ""
            if workflow.now() >= deadline:
                return f"replacement {', '.join(state.waiting)} not initialized within {REPLACEMENT_TIMEOUT}"
            await self._sleep_unless(lambda: self._replacement_news, interval)
            interval = min(interval * 2, REPLACEMENT_POLL_MAX)

    # An activity method, async or not, and its one argument: the method's result, as the method's own type.
    @overload
    @staticmethod
    async def _step(fn: Callable[[Any, _Arg], Awaitable[_Result]], arg: _Arg) -> _Result: ...

    @overload
    @staticmethod
    async def _step(fn: Callable[[Any, _Arg], _Result], arg: _Arg) -> _Result: ...

    @staticmethod
    async def _step(fn: Callable[[Any, _Arg], Any], arg: _Arg) -> Any:
        return await workflow.execute_activity_method(
            fn, arg, start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY
        )

    def _record(self, line: str) -> None:
        if self.state.recent and self.state.recent[-1] == line:
            return  # the same as last round: already in the memo, and in history as the activity result
        self.state.recent = [*self.state.recent, line][-RECENT_LIMIT:]
        workflow.upsert_memo({"last": line})


def _queued(queue: list[ManualRequest], requests: list[ManualRequest]) -> list[ManualRequest]:
    """`queue` with each of `requests` whose NodeClaim is not queued yet appended (an empty reason becomes
    "manual replace")."""
    merged = list(queue)
    for request in requests:
        if request.node_claim and all(q.node_claim != request.node_claim for q in merged):
            merged.append(ManualRequest(node_claim=request.node_claim, reason=request.reason or "manual replace"))
    return merged


async def start_disruption_controller(client: Client, task_queue: str, settings: DisruptionSettings) -> None:
    """Signal-with-start of the singleton: started with `settings`, or the running one reconfigured."""
    await _signal_with_start(client, task_queue, settings, DisruptionSignal.CONFIGURE, [settings])


async def wake_disruption_controller(client: Client, task_queue: str, settings: DisruptionSettings) -> None:
    """Tell the controller there is news to decide on: signal-with-start of `wake`, so a controller
    terminated by hand (`temporal workflow terminate`) is started again with `settings`."""
    await _signal_with_start(client, task_queue, settings, DisruptionSignal.WAKE, [])


async def _signal_with_start(
    client: Client,
    task_queue: str,
    settings: DisruptionSettings,
    signal: DisruptionSignal,
    args: list[DisruptionSettings],
) -> None:
    """`signal` (with `args`) to the running singleton, or to a new one started with `settings`."""
    await client.start_workflow(
        DisruptionControllerWorkflow.run,
        DisruptionState(settings=settings),
        id=WORKFLOW_ID,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        start_signal=signal,
        start_signal_args=args,
    )
