"""The garbage collector: a singleton workflow (id "garbage-collector") that terminates leaked instances and
deletes NodeClaims whose instance is gone.

A round runs the `collect_leaked_instances` activity, which terminates live instances of the cluster
whose NodeClaim does not exist and which launched at least `min_age_seconds` ago, and deletes registered
NodeClaims whose instance no longer exists and whose Node is not Ready (activities.garbage_collection.collector).
One runs when the workflow starts, when its settings change, on the `collect` signal, and otherwise after
BACKSTOP. The leader looks every `interval_seconds` at what a round would act on (activities.garbage_collection.survey,
the same checks, acting on nothing) and signals `collect` only when there is something, so a cluster with
nothing to collect costs the collector a round an hour (48 billable actions a day) where a round every 2
minutes cost 1,440. The hourly backstop is for workers that run while none of them leads (the Lease
cannot be written): a leaked instance costs far more than the round. What it did is in the activity
results in history (the audit log), in the `status` query (the most recent ones) and in the memo. The
claims whose Node or NodeClaim vanished (the activity's `lost_claims`) get the `delete` signal here: the
backstop of the worker's deletion watcher, since a running claim's workflow does not poll. A failed round
is recorded; the leader's next look asks again. Continue-as-new every `ROUNDS_PER_RUN` rounds (or when
Temporal suggests it) carries the state, so history stays bounded however long it runs.

Each worker starts it with signal-with-start of `configure` (its interval and min-age settings): the
first worker starts it, later ones reconfigure the running one. A change of settings runs a round at
once. `request_collection` is the leader's signal-with-start of `collect`, which also starts a collector
that was terminated.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from activities.garbage_collection.collector import (
    DEFAULT_MIN_AGE_SECONDS,
    CollectInput,
    GarbageCollectionActivities,
    LeakedInstance,
    StrandedClaim,
)
from workflows.external import signal_workflow
from workflows.messages import GarbageCollectorSignal, NodeClaimSignal, Query
from workflows.nodeclaim_state import workflow_id as nodeclaim_workflow_id

WORKFLOW_ID = "garbage-collector"
OWNER_MEMO = "cluster"  # the memo key naming the cluster that owns the namespace (workers.temporal.namespace_owner)
DEFAULT_INTERVAL_SECONDS = 120
BACKSTOP = timedelta(hours=1)  # a round without being asked, should the leader's survey not run
ROUNDS_PER_RUN = 100  # ~10 events per round: about 1,000 events per run
RECENT_LIMIT = 20
COLLECT_TIMEOUT = timedelta(minutes=2)
# Bounded: a round that keeps failing is given up and recorded; the next round tries again.
COLLECT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)


class GarbageCollectorSettings(BaseModel):
    """How often the leader looks for garbage (activities.garbage_collection.survey), and how old an instance without a
    claim must be to count as leaked."""

    interval_seconds: int = Field(default=DEFAULT_INTERVAL_SECONDS, gt=0)
    min_age_seconds: int = Field(default=DEFAULT_MIN_AGE_SECONDS, ge=0)


class GarbageCollectorState(BaseModel):
    """The workflow's input and its carried state: the settings, then what it has done so far."""

    interval_seconds: int = Field(default=DEFAULT_INTERVAL_SECONDS, gt=0)
    min_age_seconds: int = Field(default=DEFAULT_MIN_AGE_SECONDS, ge=0)
    rounds: int = 0
    terminated_total: int = 0
    claims_deleted_total: int = 0
    recent: list[LeakedInstance] = Field(default_factory=list)  # newest last, at most RECENT_LIMIT
    recent_claims: list[StrandedClaim] = Field(default_factory=list)  # newest last, at most RECENT_LIMIT
    last_error: str = ""

    def summary(self) -> str:
        line = f"{self.rounds} rounds, {self.terminated_total} leaked instances terminated"
        if self.claims_deleted_total:
            line += f", {self.claims_deleted_total} NodeClaims without an instance deleted"
        if self.recent:
            last = self.recent[-1]
            line += f"; last {last.instance_id} (NodeClaim {last.node_claim})"
        if self.last_error:
            line += f"; last round failed: {self.last_error}"
        return line


@workflow.defn(name="GarbageCollector", sandboxed=False)
class GarbageCollectorWorkflow:
    def __init__(self) -> None:
        self.s = GarbageCollectorState()
        self.collect_requested = False
        self.configured: GarbageCollectorSettings | None = None

    @workflow.signal(name=GarbageCollectorSignal.COLLECT)
    def collect(self) -> None:
        """Run a round now instead of at the next timer."""
        self.collect_requested = True

    @workflow.signal(name=GarbageCollectorSignal.CONFIGURE)
    def configure(self, settings: GarbageCollectorSettings) -> None:
        """Adopt the interval and min-age; if either changed, run a round now."""
        self.configured = settings
        self._apply_settings()

    def _apply_settings(self) -> None:
        # A signal can be handled before `run` has set the state from its input; run applies it again.
        wanted = self.configured
        if wanted is None:
            return
        if (wanted.interval_seconds, wanted.min_age_seconds) != (self.s.interval_seconds, self.s.min_age_seconds):
            self.s.interval_seconds, self.s.min_age_seconds = wanted.interval_seconds, wanted.min_age_seconds
            self.collect_requested = True

    @workflow.query(name=Query.STATUS)
    def status(self) -> GarbageCollectorState:
        return self.s

    @workflow.run
    async def run(self, state: GarbageCollectorState | None = None) -> None:
        self.s = state or GarbageCollectorState()
        self._apply_settings()
        for _ in range(ROUNDS_PER_RUN):
            self.collect_requested = False
            await self._round()
            workflow.upsert_memo({"summary": self.s.summary()})
            if workflow.info().is_continue_as_new_suggested():
                break
            try:
                await workflow.wait_condition(lambda: self.collect_requested, timeout=BACKSTOP)
            except TimeoutError:
                pass
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(self.s)

    async def _round(self) -> None:
        self.s.rounds += 1
        try:
            result = await workflow.execute_activity_method(
                GarbageCollectionActivities.collect,
                CollectInput(min_age_seconds=self.s.min_age_seconds),
                start_to_close_timeout=COLLECT_TIMEOUT,
                retry_policy=COLLECT_RETRY,
            )
        except ActivityError as err:
            self.s.last_error = str(err.cause or err)
            workflow.logger.warning("garbage collection round %d failed: %s", self.s.rounds, self.s.last_error)
            return
        self.s.last_error = ""
        self.s.terminated_total += len(result.terminated)
        self.s.recent = (self.s.recent + result.terminated)[-RECENT_LIMIT:]
        self.s.claims_deleted_total += len(result.deleted_claims)
        self.s.recent_claims = (self.s.recent_claims + result.deleted_claims)[-RECENT_LIMIT:]
        for lost in result.lost_claims:
            if not await signal_workflow(nodeclaim_workflow_id(lost.node_claim), NodeClaimSignal.DELETE, lost.reason):
                # its workflow has ended (or never ran): nothing is left to stop
                workflow.logger.info("NodeClaim %s: no workflow to signal (%s)", lost.node_claim, lost.reason)


async def start_garbage_collector(
    client: Client, task_queue: str, owner: str, settings: GarbageCollectorSettings | None = None
) -> None:
    """Start the singleton with these settings, or (signal-with-start) give them to the running one,
    which keeps its rounds and counters. `owner`: the cluster recorded in the memo (OWNER_MEMO) of a
    collector this starts (workers.temporal.namespace_owner)."""
    settings = settings or GarbageCollectorSettings()
    await _signal_with_start(client, task_queue, settings, owner, GarbageCollectorSignal.CONFIGURE, [settings])


async def request_collection(client: Client, task_queue: str, settings: GarbageCollectorSettings, owner: str) -> None:
    """Ask the collector for a round now (signal-with-start of `collect`): the running one runs it; a
    collector that is not running (terminated by hand) starts with `settings`, `owner` in its memo, and
    runs its first round."""
    await _signal_with_start(client, task_queue, settings, owner, GarbageCollectorSignal.COLLECT, [])


async def _signal_with_start(
    client: Client,
    task_queue: str,
    settings: GarbageCollectorSettings,
    owner: str,
    signal: GarbageCollectorSignal,
    args: list[Any],
) -> None:
    await client.start_workflow(
        GarbageCollectorWorkflow.run,
        GarbageCollectorState(**settings.model_dump()),
        id=WORKFLOW_ID,
        task_queue=task_queue,
        start_signal=signal,
        start_signal_args=args,
        memo={OWNER_MEMO: owner},
    )


__all__ = [
    "OWNER_MEMO",
    "WORKFLOW_ID",
    "GarbageCollectorSettings",
    "GarbageCollectorState",
    "GarbageCollectorWorkflow",
    "request_collection",
    "start_garbage_collector",
]
